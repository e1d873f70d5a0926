import { createHash, randomBytes } from 'node:crypto';

/** `svc_<base64url secret>`: only A-Za-z0-9_- and 40..100 characters in total. */
export const API_KEY_PREFIX = 'svc_';
const API_KEY_PATTERN = /^svc_[A-Za-z0-9_-]+$/;

export function isWellFormedApiKey(token: string): boolean {
  return token.length >= 40 && token.length <= 100 && API_KEY_PATTERN.test(token);
}

/** 32 bytes from the CSPRNG: `svc_` + 43 base64url characters = 47 characters. */
export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url');
}

/** Only this digest is stored; lookups go by it, so no secret is ever compared in the clear. */
export function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

/**
 * What listings show of a key: `svc_…` and the first 8 hex digits of its SHA-256, enough to
 * tell keys apart (and to match one: `printf %s "$KEY" | sha256sum | cut -c1-8`) without
 * storing a single character of the secret.
 */
export const displayPrefix = (key: string): string => `${API_KEY_PREFIX}…${hashSecret(key).toString('hex').slice(0, 8)}`;
