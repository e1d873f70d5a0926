import { Agent, request, type Dispatcher } from 'undici';
import type { ProviderName } from './catalog';
import { credentialsSent, redactCredentials } from './redact';
import {
  InvalidUpstreamResponseError,
  UpstreamConnectionError,
  UpstreamTimeoutError,
  httpErrorFor,
  parseRetryAfter,
  type ProviderError,
} from './errors';

export interface TransportSettings {
  provider: ProviderName;
  baseUrl: string;
  timeoutMs: number;
}

export interface PostOptions {
  model: string;
  headers: Record<string, string>;
  signal?: AbortSignal;
  /** True when a provider's structured error body says the prompt overflowed the context window. */
  isContextOverflow: (status: number, body: string) => boolean;
}

/** An upstream answer whose status was 2xx; the caller reads the body exactly once. */
export interface UpstreamResponse {
  status: number;
  headers: { get(name: string): string | null };
  body: Dispatcher.ResponseData['body'];
  /** Stops forwarding the caller's abort; readJson/bodyChunks/readBytes call it when the body is done. */
  detach: () => void;
}

/**
 * One keep-alive connection pool per process for every upstream. undici's `request` rather
 * than `fetch`: on the gateway's hot path fetch's WHATWG streams cost about twice the CPU
 * per call and keep each response's objects alive across garbage collections, which is
 * what made the gateway's p99 (README, Benchmarks).
 */
const upstreamAgent = new Agent({
  // An idle connection is dropped after 4 s (fetch's default): servers such as uvicorn (vLLM)
  // close theirs after 5 s without saying so, and a POST sent as they do fails.
  keepAliveTimeout: 4_000,
  // Our own timer covers connecting and the response head (settings.timeoutMs). A body that
  // stops moving for 5 minutes is given up; the clock restarts with every chunk.
  headersTimeout: 0,
  bodyTimeout: 300_000,
  // Like fetch: follow a provider's or proxy's redirect rather than relay a bare 3xx.
  maxRedirections: 3,
  // Whole answers (images as base64, speech) are read into memory: an upstream or proxy that
  // never stops sending is cut off here (a broken connection to the caller, 502) rather than
  // filling the heap. Far above any real answer, a stream included.
  maxResponseSize: 256 * 1024 * 1024,
});

const USER_AGENT = 'agent-gateway';

/** How long an error answer's body is waited for: it only decorates the error. */
const ERROR_BODY_WAIT_MS = 5_000;

/**
 * An error answer's body, or '' if it does not arrive in ERROR_BODY_WAIT_MS (a 304 whose
 * Content-Length promises a body that never comes kept the caller waiting for bodyTimeout).
 */
async function errorBody(body: Dispatcher.ResponseData['body']): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => {
      body.destroy();
      resolve('');
    }, ERROR_BODY_WAIT_MS);
  });
  try {
    return await Promise.race([body.text().catch(() => ''), late]);
  } finally {
    clearTimeout(timer);
  }
}

const headerReader = (headers: Record<string, string | string[] | undefined>) => ({
  get(name: string): string | null {
    const value = headers[name.toLowerCase()];
    return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
  },
});

/** POSTs JSON upstream (see `post`). */
export function postJson(settings: TransportSettings, url: string, body: unknown, options: PostOptions): Promise<UpstreamResponse> {
  return post(settings, url, JSON.stringify(body), { ...options, headers: { 'content-type': 'application/json', ...options.headers } });
}

/**
 * POSTs upstream. The timeout covers the wait for the response head; the caller's signal
 * (a client that went away, an interrupted run) aborts the request at any time, body
 * included. Non-2xx answers become typed errors that keep status and body.
 */
export async function post(settings: TransportSettings, url: string, body: string | FormData, options: PostOptions): Promise<UpstreamResponse> {
  const controller = new AbortController();
  const onAbort = () => controller.abort(options.signal?.reason);
  if (options.signal?.aborted) onAbort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const detach = () => options.signal?.removeEventListener('abort', onAbort);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error('upstream timeout'));
  }, settings.timeoutMs);
  let response: Dispatcher.ResponseData;
  try {
    response = await request(url, { method: 'POST', headers: { 'user-agent': USER_AGENT, ...options.headers }, body, signal: controller.signal, dispatcher: upstreamAgent });
  } catch (error) {
    detach();
    throw transportFailure(settings.provider, options.model, error, timedOut, options.signal);
  } finally {
    clearTimeout(timer);
  }
  const headers = headerReader(response.headers);
  if (response.statusCode < 200 || response.statusCode >= 300) {
    const text = redactCredentials(await errorBody(response.body), credentialsSent(url, options.headers));
    detach();
    throw httpErrorFor(
      {
        provider: settings.provider,
        model: options.model,
        status: response.statusCode,
        body: text,
        contentType: headers.get('content-type') ?? 'application/json',
        retryAfterMs: parseRetryAfter(headers),
        upstreamRequestId: headers.get('request-id') ?? headers.get('x-request-id') ?? undefined,
      },
      options.isContextOverflow(response.statusCode, text),
    );
  }
  // Keep forwarding the caller's abort while the body is read; the reader detaches when done.
  return { status: response.statusCode, headers, body: response.body, detach };
}

export function transportFailure(provider: ProviderName, model: string, error: unknown, timedOut: boolean, signal?: AbortSignal): ProviderError | unknown {
  if (signal?.aborted) return signal.reason ?? error; // the caller cancelled: not an upstream failure
  // Past the upstream agent's maxResponseSize: the answer is what is wrong, and asking again would fetch it again.
  if ((error as { code?: string }).code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') {
    return new InvalidUpstreamResponseError(`${provider} answered with more than the gateway reads`, { provider, model, retryable: false, cause: error });
  }
  if (timedOut) return new UpstreamTimeoutError(`${provider} did not answer in time`, { provider, model, retryable: true, cause: error });
  return new UpstreamConnectionError(`cannot reach ${provider}`, { provider, model, retryable: true, cause: error });
}

/** Reads a whole JSON body, mapping a broken connection to a connection error. */
export async function readJson(response: UpstreamResponse, provider: ProviderName, model: string, signal?: AbortSignal): Promise<unknown> {
  try {
    return await response.body.json();
  } catch (error) {
    throw transportFailure(provider, model, error, false, signal);
  } finally {
    response.detach();
  }
}

/** Reads a whole binary body (audio), mapping a broken connection to a connection error. */
export async function readBytes(response: UpstreamResponse, provider: ProviderName, model: string, signal?: AbortSignal): Promise<Buffer> {
  try {
    return Buffer.from(await response.body.arrayBuffer());
  } catch (error) {
    throw transportFailure(provider, model, error, false, signal);
  } finally {
    response.detach();
  }
}

/**
 * The response body as an async iterable of byte chunks; releases the abort listener when
 * the body is done. Callers must iterate it (the body timeout bounds one that is not).
 */
export async function* bodyChunks(response: UpstreamResponse): AsyncGenerator<Uint8Array> {
  const body = response.body;
  try {
    // Stream parsers stop at the protocol's last event ([DONE], message_stop), which leaves
    // at most the transfer's terminator unread. Destroying the body then would cost an
    // error with a stack trace per call and the keep-alive connection: drain it instead.
    for await (const chunk of body.iterator({ destroyOnReturn: false })) yield chunk as Uint8Array;
  } finally {
    if (body.readableEnded || body.destroyed) response.detach();
    else {
      body.once('close', response.detach); // the caller's abort still applies while draining
      drain(body);
    }
  }
}

/**
 * Reads an abandoned body to its end so its connection is reused. After the protocol's
 * last event only a few bytes remain; more than 64 KiB or 1 s means the upstream is still
 * generating (a consumer stopped on an error), so the request is cut off instead.
 */
function drain(body: UpstreamResponse['body']): void {
  const timer = setTimeout(() => body.destroy(), 1_000).unref();
  void body
    .dump({ limit: 64 * 1024 })
    .catch(() => undefined)
    .finally(() => clearTimeout(timer));
}

/** Joins a base URL and a path without doubling or dropping slashes. */
export const joinUrl = (base: string, path: string): string => `${base.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
