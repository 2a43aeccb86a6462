/**
 * The shapes this API returns and the operator tooling accepts, written once with zod. The
 * response mappers are typed by these, the seed loader validates with them, and the OpenAPI
 * document is generated from them.
 */
import { z } from 'zod';
import { ID_PATTERN } from './ids';

export const SCOPES = ['read', 'write', 'webhooks', 'team:read', 'billing:read'] as const;
export const ScopeSchema = z.enum(SCOPES);
export type Scope = z.infer<typeof ScopeSchema>;

export { ID_PATTERN };
const Id = z.string().regex(ID_PATTERN, 'letters, digits, "_" or "-", 1 to 64 characters');
/** A non-empty string (of at most `max` characters) with its OpenAPI description and examples. */
const text = (meta: z.GlobalMeta, max?: number) => (max ? z.string().min(1).max(max) : z.string().min(1)).meta(meta);
const Timestamp = z.iso
  .datetime({ offset: false })
  .meta({ description: 'ISO 8601 UTC timestamp', examples: ['2024-01-15T09:30:00.000Z'] });

export const AddressSchema = z
  .object({
    line1: text({ examples: ['Keizersgracht 123'] }),
    line2: z
      .string()
      .min(1)
      .optional()
      .meta({ description: 'Absent when the address has no second line', examples: ['2nd floor'] }),
    city: text({ examples: ['Amsterdam'] }),
    postal_code: text({ examples: ['1015 CJ'] }),
    country: z
      .string()
      .regex(/^[A-Z]{2}$/, 'ISO 3166-1 alpha-2 country code')
      .meta({ description: 'ISO 3166-1 alpha-2 country code', examples: ['NL'] }),
  })
  .meta({ description: 'Postal address of the branch' });

const BranchFields = {
  id: Id.meta({ description: 'Branch id', examples: ['br_main'] }),
  name: text({ description: 'Name of the branch', examples: ['Amsterdam Centrum'] }, 200),
  business_name: text({ description: 'Business it belongs to', examples: ['Acme Coffee'] }, 200),
  timezone: text({ description: 'IANA time zone', examples: ['Europe/Amsterdam'] }),
  currency: z
    .string()
    .regex(/^[A-Z]{3}$/, 'ISO 4217 currency code')
    .meta({ description: 'ISO 4217 currency code', examples: ['EUR'] }),
  address: AddressSchema,
  created_at: Timestamp,
};

export const MEMBER_ROLES = ['owner', 'manager', 'staff'] as const;
const MemberFields = {
  id: Id.meta({ description: 'Member id', examples: ['mem_01'] }),
  name: text({ description: 'Full name', examples: ['Ada Jansen'] }, 200),
  email: z.email().meta({ examples: ['ada@example.com'] }),
  role: z.enum(MEMBER_ROLES).meta({ description: 'Role on the branch team', examples: ['manager'] }),
  created_at: Timestamp,
};

const PaymentProviderFields = {
  id: Id.meta({ description: 'Payment provider id, as used in /v1/payment-providers/{id}', examples: ['pp_stripe'] }),
  provider: z
    .string()
    .regex(/^[a-z0-9_]{1,40}$/, 'lower-case provider slug, e.g. stripe')
    .meta({ description: 'Lower-case provider slug', examples: ['stripe'] }),
  name: text({ description: 'Display name', examples: ['Stripe'] }, 200),
  created_at: Timestamp,
};

export const BranchSchema = z
  .object({ ...BranchFields, object: z.literal('branch') })
  .meta({ description: 'The branch the API key belongs to' });
export const MemberSchema = z
  .object({ ...MemberFields, object: z.literal('member') })
  .meta({ description: 'A team member of the branch' });
export const PaymentProviderSchema = z
  .object({
    ...PaymentProviderFields,
    object: z.literal('payment_provider'),
    active: z.literal(true).describe('Always true: inactive providers are never returned'),
  })
  .meta({ description: 'An active payment provider configured on the branch' });
export type Branch = z.infer<typeof BranchSchema>;
export type Member = z.infer<typeof MemberSchema>;
export type PaymentProvider = z.infer<typeof PaymentProviderSchema>;

export const listSchema = <T extends z.ZodType>(item: T) =>
  z.object({
    object: z.literal('list'),
    data: z.array(item),
    has_more: z.boolean().meta({ description: 'Whether another page follows this one' }),
    next_cursor: z
      .string()
      .nullable()
      .meta({ description: 'Pass as `cursor` to get the next page; null on the last page' }),
  });
export interface List<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

/** Seed file: what `branch-api seed` loads (docs/operating.md "Seed file format"). */
export const SeedFileSchema = z.object({
  branches: z
    .array(
      z.object({
        ...BranchFields,
        created_at: Timestamp.optional(),
        members: z.array(z.object({ ...MemberFields, created_at: Timestamp.optional() })).default([]),
        payment_providers: z
          .array(z.object({ ...PaymentProviderFields, active: z.boolean(), created_at: Timestamp.optional() }))
          .default([]),
      }),
    )
    .min(1),
});
export type SeedFile = z.infer<typeof SeedFileSchema>;
export type SeedBranch = SeedFile['branches'][number];
