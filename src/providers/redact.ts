/**
 * Upstream error bodies are relayed to callers (the spec's pass-through keeps the provider's
 * status and body), but a provider may quote the credential the gateway sent: OpenAI's 401
 * says "Incorrect API key provided: sk-proj-****abcd". The gateway's provider keys are never
 * the caller's to see, whole or in part, so relayed text loses them first.
 */

// Headers that carry the gateway's provider credentials.
const CREDENTIAL_HEADERS = ['authorization', 'x-api-key', 'api-key', 'x-goog-api-key'];
// Provider key shapes, also when partly masked: OpenAI and Anthropic `sk-…`, Google `AIza…`.
const KEY_SHAPES = /\bsk-[A-Za-z0-9_\-*…]{2,}|\bAIza[0-9A-Za-z_\-]{8,}/g;
const REDACTED = '[redacted]';

/** The credential values a request carried (header values and a `key` query parameter). */
export function credentialsSent(url: string, headers: Record<string, string>): string[] {
  const values: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (!CREDENTIAL_HEADERS.includes(name.toLowerCase()) || !value) continue;
    values.push(value);
    const bare = value.replace(/^(Bearer|Basic)\s+/i, '');
    if (bare !== value) values.push(bare);
  }
  const key = URL.canParse(url) ? new URL(url).searchParams.get('key') : null;
  if (key) values.push(key);
  // Longest first, so a header value is replaced whole before its bare token.
  return values.filter((value) => value.length >= 8).sort((a, b) => b.length - a.length);
}

/** `text` without the given credentials and without anything shaped like a provider key. */
export function redactCredentials(text: string, credentials: readonly string[]): string {
  let out = text;
  for (const credential of credentials) out = out.split(credential).join(REDACTED);
  return out.replace(KEY_SHAPES, REDACTED);
}
