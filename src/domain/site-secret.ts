import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * The per-site HMAC secret: 32 random bytes, shown to the site as 64 lowercase hex
 * characters. At rest it is encrypted with AES-256-GCM under a key derived from
 * GATEWAY_SECRET with HKDF-SHA256; the site_id is bound in as additional data, so a
 * ciphertext copied onto another row does not decrypt. Format: `v1.` + base64 of
 * iv (12 bytes) || auth tag (16 bytes) || ciphertext. The version prefix leaves room
 * for key rotation (decrypt with the old key, re-encrypt as v2).
 */
const VERSION = 'v1';

export const generateSiteHmacSecret = (): string => randomBytes(32).toString('hex');

function encryptionKey(gatewaySecret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', gatewaySecret, 'agent-gateway/site-hmac-secret', 'aes-256-gcm/v1', 32));
}

export function encryptSiteSecret(gatewaySecret: string, siteId: string, secretHex: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', encryptionKey(gatewaySecret), iv);
  cipher.setAAD(Buffer.from(siteId, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(secretHex, 'utf8'), cipher.final()]);
  return `${VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64')}`;
}

export function decryptSiteSecret(gatewaySecret: string, siteId: string, stored: string): string {
  const [version, payload] = stored.split('.', 2);
  if (version !== VERSION || !payload) throw new Error('unknown site secret format');
  const raw = Buffer.from(payload, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', encryptionKey(gatewaySecret), raw.subarray(0, 12));
  decipher.setAAD(Buffer.from(siteId, 'utf8'));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}
