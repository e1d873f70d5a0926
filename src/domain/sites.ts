import { z } from 'zod';

/** Limits of POST /v1/sites, from the spec's field tables. */
export const SITE_REGISTRATION_BODY_LIMIT_BYTES = 64 * 1024;
export const SITE_URL_MAX_BYTES = 2048;
export const DISPLAY_NAME_MAX_CHARS = 255;
export const PROJECT_ID_MAX_CHARS = 64;
export const ACTIVE_PLUGINS_MAX_ITEMS = 500;

export const SITE_STATUSES = ['active', 'revoked', 'suspended'] as const;
export type SiteStatus = (typeof SITE_STATUSES)[number];

export const SITE_ID_PATTERN = /^site_[0-9A-Za-z]{22}$/;

/** Characters as a person counts them (code points), not UTF-16 units. */
const charCount = (value: string) => [...value].length;
const maxChars = (max: number) => z.string().refine((v) => charCount(v) <= max, `must be at most ${max} characters`);

/**
 * `site_url`: an http(s) URL with a host, at most 2048 bytes (UTF-8). The gateway calls
 * `{site_url}/wp-json/gateway/v1/...`, so a query or fragment (which that path could not
 * follow, an empty `?` included) and whitespace are refused. The host must be written as `scheme://host`: the parser would
 * infer one from `http:example.com` or `http:///example.com`. Credentials (`user:pw@`)
 * are refused: the site's calls cannot send them, and listings would show them.
 */
const siteUrl = z
  .string()
  .refine((v) => Buffer.byteLength(v, 'utf8') <= SITE_URL_MAX_BYTES, `must be at most ${SITE_URL_MAX_BYTES} bytes`)
  // The URL parser drops tabs and newlines anywhere and spaces at the ends, silently: the stored
  // text would not be the URL the gateway calls.
  .refine((v) => !/[\s\p{Cc}]/u.test(v), 'must not contain whitespace or control characters')
  .refine((v) => {
    try {
      const url = new URL(v);
      return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '' && url.port !== '0';
    } catch {
      return false;
    }
  }, 'must be an absolute http(s) URL with a scheme and a host (and a port other than 0)')
  .refine((v) => !/^https?:\/\/[^/?#]*@/i.test(v), 'must not carry credentials (user:password@)')
  .refine((v) => /^https?:\/\/[^/?#]/i.test(v), 'must be an absolute http(s) URL written scheme://host')
  .refine((v) => !URL.canParse(v) || (new URL(v).search === '' && !v.includes('?') && !v.includes('#')), 'must not have a query or a fragment: abilities are called under {site_url}/wp-json/');

// Optional members also accept null (plugins report unknown values as null); null means "not reported".
const optionalText = (max: number) => maxChars(max).nullish();
const optionalFlag = z.boolean().nullish();

export const SiteInfoSchema = z.strictObject({
  active_plugins: z.array(z.string()).max(ACTIVE_PLUGINS_MAX_ITEMS, `must have at most ${ACTIVE_PLUGINS_MAX_ITEMS} items`).nullish(),
  php_version: optionalText(64),
  wp_version: optionalText(64),
  active_theme: optionalText(256),
  locale: optionalText(64),
  server_software: optionalText(256),
  db_version: optionalText(64),
  memory_limit: optionalText(32),
  timezone: optionalText(64),
  // May exceed active_plugins.length when the plugin truncated the list to 500.
  active_plugin_count: z.number().int().min(0).nullish(),
  ssl_valid: optionalFlag,
  is_multisite: optionalFlag,
  wp_debug: optionalFlag,
});
export type SiteInfo = z.infer<typeof SiteInfoSchema>;

export const SiteRegistrationSchema = z.strictObject({
  site_url: siteUrl,
  display_name: maxChars(DISPLAY_NAME_MAX_CHARS).optional(),
  project_id: maxChars(PROJECT_ID_MAX_CHARS).min(1).nullish(),
  site_info: SiteInfoSchema.nullish(),
});
export type SiteRegistration = z.infer<typeof SiteRegistrationSchema>;

/** The registered-site resource returned by POST /v1/sites. */
export interface RegisteredSite {
  site_id: string;
  client_id: string;
  status: SiteStatus;
  created_at: string;
  site_hmac_secret: string;
}

/**
 * The display name when none (or only whitespace) is given: the site_url, truncated
 * to 255 characters.
 */
export function displayNameFor(input: Pick<SiteRegistration, 'site_url' | 'display_name'>): string {
  const given = input.display_name?.trim();
  if (given) return given;
  return [...input.site_url].slice(0, DISPLAY_NAME_MAX_CHARS).join('');
}

/**
 * Ownership key of a site_url within an account: scheme and host lower-cased, default
 * port and trailing slashes dropped, query and fragment ignored. `https://Example.com/`
 * and `https://example.com` are the same site.
 */
export function siteUrlKey(siteUrl: string): string {
  const url = new URL(siteUrl);
  const port = url.port && !((url.protocol === 'https:' && url.port === '443') || (url.protocol === 'http:' && url.port === '80')) ? `:${url.port}` : '';
  const path = url.pathname.replace(/\/+$/, '');
  return `${url.protocol}//${url.hostname.toLowerCase()}${port}${path}`;
}

/** Drops null members so stored site_info holds only what the site reported. */
export function compactSiteInfo(info: SiteInfo | null | undefined): Record<string, unknown> | null {
  if (!info) return null;
  return Object.fromEntries(Object.entries(info).filter(([, value]) => value !== null && value !== undefined));
}
