import type { ProviderName } from './catalog';
import {
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
  fetch?: typeof fetch;
}

export interface PostOptions {
  model: string;
  headers: Record<string, string>;
  signal?: AbortSignal;
  /** True when a provider's structured error body says the prompt overflowed the context window. */
  isContextOverflow: (status: number, body: string) => boolean;
}

/**
 * POSTs JSON upstream. The timeout covers the wait for the response head; the caller's
 * signal (a client that went away, an interrupted run) aborts the request at any time,
 * body included. Non-2xx answers become typed errors that keep status and body.
 */
export async function postJson(settings: TransportSettings, url: string, body: unknown, options: PostOptions): Promise<Response> {
  const controller = new AbortController();
  const onAbort = () => controller.abort(options.signal?.reason);
  if (options.signal?.aborted) onAbort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error('upstream timeout'));
  }, settings.timeoutMs);
  const fetchImpl = settings.fetch ?? fetch;
  let response: Response;
  try {
    response = await fetchImpl(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...options.headers },
      body: JSON.stringify(body),
      signal: controller.signal,
    });
  } catch (error) {
    options.signal?.removeEventListener('abort', onAbort);
    throw transportFailure(settings.provider, options.model, error, timedOut, options.signal);
  } finally {
    clearTimeout(timer);
  }
  // Keep forwarding the caller's abort while the body is read; drop the listener once it is done.
  const detach = () => options.signal?.removeEventListener('abort', onAbort);
  if (!response.ok) {
    const text = await response.text().catch(() => '');
    detach();
    throw httpErrorFor(
      {
        provider: settings.provider,
        model: options.model,
        status: response.status,
        body: text,
        contentType: response.headers.get('content-type') ?? 'application/json',
        retryAfterMs: parseRetryAfter(response.headers),
        upstreamRequestId: response.headers.get('request-id') ?? response.headers.get('x-request-id') ?? undefined,
      },
      options.isContextOverflow(response.status, text),
    );
  }
  // The caller consumes the body; readJson/bodyChunks release the listener when done.
  if (!response.body) detach();
  (response as ResponseWithDetach).detach = detach;
  return response;
}

type ResponseWithDetach = Response & { detach?: () => void };

export function transportFailure(provider: ProviderName, model: string, error: unknown, timedOut: boolean, signal?: AbortSignal): ProviderError | unknown {
  if (signal?.aborted) return signal.reason ?? error; // the caller cancelled: not an upstream failure
  if (timedOut) return new UpstreamTimeoutError(`${provider} did not answer in time`, { provider, model, retryable: true, cause: error });
  return new UpstreamConnectionError(`cannot reach ${provider}`, { provider, model, retryable: true, cause: error });
}

/** Reads a whole JSON body, mapping a broken connection to a connection error. */
export async function readJson(response: Response, provider: ProviderName, model: string, signal?: AbortSignal): Promise<unknown> {
  try {
    return await response.json();
  } catch (error) {
    throw transportFailure(provider, model, error, false, signal);
  } finally {
    (response as ResponseWithDetach).detach?.();
  }
}

/** The response body as an async iterable of byte chunks; releases the abort listener at the end. */
export async function* bodyChunks(response: Response): AsyncGenerator<Uint8Array> {
  try {
    if (!response.body) return;
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) yield chunk;
  } finally {
    (response as ResponseWithDetach).detach?.();
  }
}

/** Joins a base URL and a path without doubling or dropping slashes. */
export const joinUrl = (base: string, path: string): string => `${base.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
