import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { z } from 'zod';

/** Platform API request schemas, limits and password hashing. */
export const PLATFORM_PAGE_DEFAULT = 100;
export const PLATFORM_PAGE_MAX = 100;
export const PLATFORM_JSON_LIMIT_BYTES = 1024 * 1024;
export const PLATFORM_UPLOAD_LIMIT_BYTES = 100 * 1024 * 1024;
export const INSTALL_ENVIRONMENTS = ['production', 'staging', 'development'] as const;

// Postgres returns uuids lower-case; an upper-case one must compare equal to them.
const uuid = z.uuid().transform((value) => value.toLowerCase());
// Up to 2^53 - 1 (JavaScript's exact integers): an offset past every row is an empty page, not an error.
const nonNegativeInt = z
  .string()
  .regex(/^\d{1,16}$/, 'must be a non-negative integer')
  .transform(Number)
  .refine(Number.isSafeInteger, 'must be at most 9007199254740991');

export const SiteListQuerySchema = z.strictObject({
  limit: nonNegativeInt.refine((n) => n >= 1 && n <= PLATFORM_PAGE_MAX, `must be 1..${PLATFORM_PAGE_MAX}`).optional(),
  offset: nonNegativeInt.optional(),
  account_id: uuid.optional(),
});

export const UuidSchema = uuid;

// (`.meta`: what the OpenAPI document, built from these schemas, states beyond what the schema checks say.)
const name = z.string().trim().min(1).max(255).meta({ pattern: '\\S' });
const slug = z.string().regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, 'must be lowercase letters, digits and dashes (1..63)');
const variables = z
  .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'variable names are [A-Za-z_][A-Za-z0-9_]*'), z.string().max(32 * 1024))
  .refine((v) => Object.keys(v).length <= 100, 'at most 100 variables')
  .meta({ maxProperties: 100 });

// A repository is shown as a link in consoles: http(s) (or git's ssh form) only, never `javascript:`.
const repository = z
  .url({ protocol: /^(https?|ssh|git)$/, error: 'must be an http(s), ssh or git URL' })
  .max(2048, 'must be at most 2048 characters')
  .meta({ pattern: '^([hH][tT][tT][pP][sS]?|[sS][sS][hH]|[gG][iI][tT])://[^/?#\\s]+' });
export const AppCreateSchema = z.strictObject({ name, repository: repository.optional() });
export const EnvironmentCreateSchema = z.strictObject({ name: slug, branch: z.string().min(1).max(255).optional(), variables: variables.optional() });
export const EnvironmentPatchSchema = z.strictObject({ branch: z.string().min(1).max(255).nullable().optional(), variables: variables.optional() });
/** What an upload may declare itself as: a zip archive (the body is then checked to be one). */
export const UPLOAD_MEDIA_TYPES = ['application/zip', 'application/x-zip-compressed', 'application/octet-stream'];
export const DomainSchema = z
  .string()
  .max(253)
  .regex(/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/, 'must be a lowercase DNS name');
export const DomainReplaceSchema = z.strictObject({
  domains: z
    .array(DomainSchema)
    .max(100)
    .refine((d) => new Set(d).size === d.length, 'domains must be unique')
    .meta({ uniqueItems: true }),
});

// ---- passwords: scrypt, parameters stored with the hash so they can be raised later.
const SCRYPT = { N: 16384, r: 8, p: 1, keylen: 64 };

const scryptAsync = (password: string, salt: Buffer, keylen: number, options: ScryptOptions) =>
  new Promise<Buffer>((resolve, reject) => scrypt(password, salt, keylen, options, (error, key) => (error ? reject(error) : resolve(key))));

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, SCRYPT.keylen, { N: SCRYPT.N, r: SCRYPT.r, p: SCRYPT.p });
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64'), key.toString('base64')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, N, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const key = await scryptAsync(password, Buffer.from(salt, 'base64'), expected.length, { N: Number(N), r: Number(r), p: Number(p) });
  return timingSafeEqual(key, expected);
}
