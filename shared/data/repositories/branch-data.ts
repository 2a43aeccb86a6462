import type { QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { DynamoRepository } from '../dynamodb';
import type { Page, PageRequest } from './page';
import type { Branch, Member, PaymentProvider, SeedBranch } from '../../domain/schemas';
import { ACTIVE_PROVIDERS_INDEX } from '../tables';

type Item = Record<string, unknown>;

const BRANCH_SK = 'BRANCH';
const MEMBER_PREFIX = 'MEMBER#';
const PROVIDER_PREFIX = 'PROVIDER#';
const SEED_TIMESTAMP = '1970-01-01T00:00:00.000Z';

/** The response's fields of an item, in order, by name: table attributes (branch_id, sk, ...) never reach a response. */
const pick =
  <T>(fields: readonly (keyof T & string)[], fixed: Partial<T>) =>
  (item: Item): T =>
    ({ ...Object.fromEntries(fields.map((field) => [field, item[field]])), ...fixed }) as T;

const toBranch = pick<Branch>(
  ['id', 'object', 'name', 'business_name', 'timezone', 'currency', 'address', 'created_at'],
  { object: 'branch' },
);
const toMember = pick<Member>(['id', 'object', 'name', 'email', 'role', 'created_at'], { object: 'member' });
const toPaymentProvider = pick<PaymentProvider>(['id', 'object', 'provider', 'name', 'active', 'created_at'], {
  object: 'payment_provider',
  active: true,
});

export class BranchDataRepository extends DynamoRepository {
  async getBranch(branchId: string): Promise<Branch | undefined> {
    const { Item } = await this.getItem({ Key: { branch_id: branchId, sk: BRANCH_SK } });
    return Item ? toBranch(Item) : undefined;
  }

  listMembers(branchId: string, page: PageRequest): Promise<Page<Member>> {
    return this.queryPage(
      {
        KeyConditionExpression: 'branch_id = :branch AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':branch': branchId, ':prefix': MEMBER_PREFIX },
        ...(page.after ? { ExclusiveStartKey: { branch_id: branchId, sk: MEMBER_PREFIX + page.after } } : {}),
      },
      page.limit,
      toMember,
    );
  }

  /** Active providers only, from the sparse index that holds nothing else. */
  listActiveProviders(branchId: string, page: PageRequest): Promise<Page<PaymentProvider>> {
    return this.queryPage(
      {
        IndexName: ACTIVE_PROVIDERS_INDEX,
        KeyConditionExpression: 'branch_id = :branch',
        ExpressionAttributeValues: { ':branch': branchId },
        ExclusiveStartKey: page.after
          ? { branch_id: branchId, sk: PROVIDER_PREFIX + page.after, active_provider_id: page.after }
          : undefined,
      },
      page.limit,
      toPaymentProvider,
    );
  }

  /** The provider if it exists in this branch and is active; otherwise undefined, whatever the reason. */
  async getActiveProvider(branchId: string, providerId: string): Promise<PaymentProvider | undefined> {
    const { Item } = await this.getItem({ Key: { branch_id: branchId, sk: PROVIDER_PREFIX + providerId } });
    return Item?.active === true ? toPaymentProvider(Item) : undefined;
  }

  /** Writes a branch with its members and providers (idempotent: the same input gives the same items). */
  async putBranch(branch: SeedBranch): Promise<void> {
    const { members, payment_providers: providers, ...details } = branch;
    const base = { branch_id: branch.id };
    const items: Item[] = [
      { ...base, sk: BRANCH_SK, ...details, created_at: details.created_at ?? SEED_TIMESTAMP },
      ...members.map((m) => ({ ...base, sk: MEMBER_PREFIX + m.id, ...m, created_at: m.created_at ?? SEED_TIMESTAMP })),
      ...providers.map((p) => ({
        ...base,
        sk: PROVIDER_PREFIX + p.id,
        ...p,
        created_at: p.created_at ?? SEED_TIMESTAMP,
        // Only active providers carry the sparse index's key.
        ...(p.active ? { active_provider_id: p.id } : {}),
      })),
    ];
    await this.batchPut(items);
  }

  /** Asks for one item more than the page holds, so `hasMore` is exact (no empty last page). */
  private async queryPage<T extends { id: string }>(
    query: Omit<QueryCommandInput, 'TableName' | 'Limit'>,
    limit: number,
    map: (item: Item) => T,
  ): Promise<Page<T>> {
    const { Items = [] } = await this.queryOnce({ ...query, Limit: limit + 1 });
    const items = Items.slice(0, limit).map(map);
    const hasMore = Items.length > limit;
    return { items, hasMore, ...(hasMore ? { lastId: items[items.length - 1]?.id } : {}) };
  }
}
