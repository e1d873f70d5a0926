import { createHash, createHmac, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { fetch, type Response } from 'undici';
import { namesNonPublicHost, NonPublicAddressError, publicOnlyDispatcher } from '../../net/public-address';
import { JsonTextError, parseJsonText } from '../../json-text';

/**
 * The gateway → site ability protocol (docs/sites-mcp-analytics.md, "Site abilities").
 *
 * The site plugin serves two endpoints under `{site_url}/wp-json/gateway/v1/`:
 *   GET  abilities      → {abilities: [{name, label?, description?, input_schema?}]}
 *   POST abilities/run  {ability, input} → {output}   (errors: non-2xx with {code?, message?})
 * Every call is signed with the site's HMAC secret so the site knows it comes from the
 * gateway and on whose behalf:
 *   X-Gateway-Site-Id, X-Gateway-Timestamp (Unix seconds), X-Gateway-Nonce (random hex),
 *   X-Gateway-Acting-User (identity-provider subject of the personal key's owner),
 *   X-Gateway-Signature: v1=hex(HMAC-SHA256(key = the 32 secret bytes,
 *     "v1\n{timestamp}\n{nonce}\n{METHOD}\n{path and query}\n{acting user}\n{hex SHA-256 of the body}"))
 * The site rejects a timestamp more than 300 s away, a nonce seen within that window, and
 * a signature that differs (compared in constant time).
 */
export const ABILITY_API_PATH = 'wp-json/gateway/v1/abilities';
export const SIGNATURE_VERSION = 'v1';
export const ABILITY_TIMEOUT_MS = 15_000;
const MAX_RESPONSE_BYTES = 1024 * 1024;

export interface SignedRequestParts {
  method: string;
  pathAndQuery: string;
  actingUser: string;
  body: string;
  timestamp: number;
  nonce: string;
}

/** The string both sides sign; exported so tests (playing the site) verify with the same rule. */
export function signingString(parts: SignedRequestParts): string {
  const bodyHash = createHash('sha256').update(parts.body, 'utf8').digest('hex');
  return [SIGNATURE_VERSION, String(parts.timestamp), parts.nonce, parts.method.toUpperCase(), parts.pathAndQuery, parts.actingUser, bodyHash].join('\n');
}

export function sign(secretHex: string, parts: SignedRequestParts): string {
  return `${SIGNATURE_VERSION}=${createHmac('sha256', Buffer.from(secretHex, 'hex')).update(signingString(parts)).digest('hex')}`;
}

export class SiteCallError extends Error {
  constructor(message: string, readonly code: string) {
    super(message);
  }
}

const AbilitySchema = z.looseObject({
  name: z.string().min(1),
  label: z.string().optional(),
  description: z.string().optional(),
  input_schema: z.record(z.string(), z.unknown()).optional(),
});
const ListResponseSchema = z.looseObject({ abilities: z.array(AbilitySchema) });
const RunResponseSchema = z.looseObject({ output: z.unknown() });

export type Ability = z.infer<typeof AbilitySchema>;

export interface SiteTarget {
  siteId: string;
  siteUrl: string;
  secretHex: string;
  /** Connect to public addresses only (outside development: see SITE_ALLOW_PRIVATE_ADDRESSES). */
  publicOnly: boolean;
}

/** `{site_url}/wp-json/gateway/v1/abilities{suffix}`: under the site's path, never its query or fragment. */
function abilityUrl(siteUrl: string, suffix: string): URL {
  let base: URL;
  try {
    base = new URL(siteUrl.trim());
  } catch {
    throw new SiteCallError('the site address is not a valid URL', 'unavailable');
  }
  base.search = '';
  base.hash = '';
  if (!base.pathname.endsWith('/')) base.pathname += '/';
  return new URL(`${ABILITY_API_PATH}${suffix}`, base);
}

/** `cancel`: the MCP request's own signal (its client hung up): the site call stops with it. */
async function callSite(site: SiteTarget, actingUser: string, method: 'GET' | 'POST', suffix: string, payload?: unknown, cancel?: AbortSignal): Promise<unknown> {
  const url = abilityUrl(site.siteUrl, suffix);
  const body = payload === undefined ? '' : JSON.stringify(payload);
  const timestamp = Math.floor(Date.now() / 1000);
  const nonce = randomBytes(16).toString('hex');
  const signature = sign(site.secretHex, { method, pathAndQuery: url.pathname + url.search, actingUser, body, timestamp, nonce });
  // One deadline for the whole call, the body included (a site that drips its answer must not
  // hold the request open). A timer the call holds, not AbortSignal.timeout: that signal can be
  // collected once fetch has resolved, and then it never fires for the body.
  const controller = new AbortController();
  const deadline = setTimeout(() => controller.abort(), ABILITY_TIMEOUT_MS);
  const stop = () => controller.abort();
  cancel?.addEventListener('abort', stop, { once: true });
  let response: Response;
  let text: string;
  try {
    // Checked again at call time, on the resolved addresses: the site's name may resolve
    // somewhere else now than when it registered.
    if (site.publicOnly && namesNonPublicHost(url)) throw new NonPublicAddressError(`${url.hostname} is not a public host`);
    response = await fetch(url, {
      ...(site.publicOnly ? { dispatcher: publicOnlyDispatcher() } : {}),
      method,
      headers: {
        accept: 'application/json',
        ...(body ? { 'content-type': 'application/json' } : {}),
        'x-gateway-site-id': site.siteId,
        'x-gateway-timestamp': String(timestamp),
        'x-gateway-nonce': nonce,
        'x-gateway-acting-user': actingUser,
        'x-gateway-signature': signature,
      },
      body: body || undefined,
      redirect: 'error', // a redirect would carry the signed call somewhere the site did not choose
      signal: controller.signal,
    });
    text = await readLimited(response, controller.signal);
    if (controller.signal.aborted) throw new SiteCallError('the site did not answer in time', 'timeout');
  } catch (error) {
    if (controller.signal.aborted) throw new SiteCallError('the site did not answer in time', 'timeout');
    if (error instanceof SiteCallError) throw error;
    throw new SiteCallError('the site could not be reached', 'unavailable');
  } finally {
    clearTimeout(deadline);
    cancel?.removeEventListener('abort', stop);
  }
  let parsed: unknown;
  try {
    // The request bodies' rules (depth, surrogates): an answer nested too deep to pass on is the site's failure.
    parsed = text ? parseJsonText(text) : undefined;
  } catch (error) {
    const why = error instanceof JsonTextError && error.kind !== 'syntax' ? `JSON the gateway cannot pass on (${error.message.replace('request body', 'the answer')})` : 'a body that is not JSON';
    // (A refusal's body is only read for its code: a web server's HTML error page has none.)
    if (response.ok) throw new SiteCallError(`the site answered ${response.status} with ${why}`, 'execution_failed');
  }
  if (!response.ok) {
    const detail = parsed as { code?: unknown; message?: unknown } | undefined;
    const message = typeof detail?.message === 'string' ? detail.message : `HTTP ${response.status}`;
    const code = typeof detail?.code === 'string' ? detail.code : undefined;
    // A 404 that names no code, or WordPress's own `rest_no_route`, is the site's endpoint
    // missing (the plugin not installed or not active), not an absent site (`not_found` says
    // the site is not in the key's project).
    if (response.status === 404 && (code === undefined || code === 'rest_no_route')) {
      throw new SiteCallError(`the site answered HTTP 404: its abilities endpoint was not found (is the plugin installed and active?)`, 'unavailable');
    }
    throw new SiteCallError(`the site refused the call: ${message}`, code ?? 'execution_failed');
  }
  return parsed;
}

/**
 * The body, up to 1 MiB. `signal` ends the read: undici does not error a body stream that is
 * already being read when the fetch's own signal aborts (the read goes on), so the reader is
 * cancelled here, which ends the pending read.
 */
async function readLimited(response: Response, signal: AbortSignal): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const cancel = () => void reader.cancel().catch(() => undefined);
  signal.addEventListener('abort', cancel, { once: true });
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.length;
      if (size > MAX_RESPONSE_BYTES) {
        await reader.cancel();
        throw new SiteCallError('the site answered with more than 1 MiB', 'execution_failed');
      }
      chunks.push(value);
    }
  } finally {
    signal.removeEventListener('abort', cancel);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export async function listAbilities(site: SiteTarget, actingUser: string, cancel?: AbortSignal): Promise<Ability[]> {
  const parsed = ListResponseSchema.safeParse(await callSite(site, actingUser, 'GET', '', undefined, cancel));
  if (!parsed.success) throw new SiteCallError('the site answered with an unexpected abilities list', 'execution_failed');
  return parsed.data.abilities;
}

export async function runAbility(site: SiteTarget, actingUser: string, ability: string, input: unknown, cancel?: AbortSignal): Promise<unknown> {
  const parsed = RunResponseSchema.safeParse(await callSite(site, actingUser, 'POST', '/run', { ability, input: input ?? {} }, cancel));
  if (!parsed.success) throw new SiteCallError('the site answered without an output', 'execution_failed');
  return parsed.data.output;
}
