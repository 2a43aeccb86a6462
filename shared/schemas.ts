/**
 * The shapes this API returns and the operator tooling accepts, written once with zod. The
 * response mappers are typed by these, the seed loader validates with them, and the OpenAPI
 * document is generated from them.
 */
import { z } from 'zod';

export const SCOPES = ['read', 'write', 'webhooks', 'team:read', 'billing:read'] as const;
export const ScopeSchema = z.enum(SCOPES);
export type Scope = z.infer<typeof ScopeSchema>;

/** Ids of branches, members and providers: what may appear in a URL path segment. */
export const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
const Id = z.string().regex(ID_PATTERN, 'letters, digits, "_" or "-", 1 to 64 characters');
const Timestamp = z.iso.datetime({ offset: false }).describe('ISO 8601 UTC timestamp');

export const AddressSchema = z.object({
  line1: z.string().min(1),
  line2: z.string().min(1).optional(),
  city: z.string().min(1),
  postal_code: z.string().min(1),
  country: z.string().regex(/^[A-Z]{2}$/, 'ISO 3166-1 alpha-2 country code'),
});

const BranchFields = {
  id: Id,
  name: z.string().min(1).max(200),
  business_name: z.string().min(1).max(200),
  timezone: z.string().min(1).describe('IANA time zone, e.g. Europe/Amsterdam'),
  currency: z.string().regex(/^[A-Z]{3}$/, 'ISO 4217 currency code'),
  address: AddressSchema,
  created_at: Timestamp,
};

export const MEMBER_ROLES = ['owner', 'manager', 'staff'] as const;
const MemberFields = {
  id: Id,
  name: z.string().min(1).max(200),
  email: z.email(),
  role: z.enum(MEMBER_ROLES),
  created_at: Timestamp,
};

const PaymentProviderFields = {
  id: Id,
  provider: z.string().regex(/^[a-z0-9_]{1,40}$/, 'lower-case provider slug, e.g. stripe'),
  name: z.string().min(1).max(200),
  created_at: Timestamp,
};

export const BranchSchema = z.object({ ...BranchFields, object: z.literal('branch') });
export const MemberSchema = z.object({ ...MemberFields, object: z.literal('member') });
export const PaymentProviderSchema = z.object({
  ...PaymentProviderFields,
  object: z.literal('payment_provider'),
  active: z.literal(true).describe('Always true: inactive providers are never returned'),
});
export type Branch = z.infer<typeof BranchSchema>;
export type Member = z.infer<typeof MemberSchema>;
export type PaymentProvider = z.infer<typeof PaymentProviderSchema>;

export const listSchema = <T extends z.ZodType>(item: T) =>
  z.object({
    object: z.literal('list'),
    data: z.array(item),
    has_more: z.boolean(),
    next_cursor: z.string().nullable(),
  });
export interface List<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

export const ERROR_CODES = [
  'missing_api_key',
  'invalid_api_key',
  'expired_api_key',
  'revoked_api_key',
  'insufficient_scope',
  'invalid_request',
  'not_found',
  'method_not_allowed',
  'service_unavailable',
  'internal_error',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];
export const ErrorBodySchema = z.object({
  error: z.object({
    code: z.enum(ERROR_CODES),
    message: z.string(),
    request_id: z.string(),
  }),
});
export type ErrorBody = z.infer<typeof ErrorBodySchema>;

/** Seed file: what `branch-api seed` loads (see README "Seed file format"). */
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
