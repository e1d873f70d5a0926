import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { listModels } from '../catalog';
import { anthropicProtocol } from './anthropic-protocol';
import { googleProtocol } from './google-protocol';
import { handleOpenAIMedia } from './openai-media';
import { openaiProtocol } from './openai-protocol';
import type { SimProtocol } from './protocol';
import { SimError, planResponse } from './script';

/**
 * The provider simulator: a real HTTP server speaking the OpenAI chat completions (and
 * the OpenAI images and audio endpoints), Anthropic messages and Google generateContent
 * protocols (JSON and SSE), with
 * deterministic replies steered by directives (docs/simulator.md).
 */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
  status?: number;
  /** The client closed the connection before the response was complete. */
  aborted: boolean;
  finished: boolean;
}

export interface Simulator {
  url: string;
  server: Server;
  /** The most recent requests, oldest first (bounded). */
  requests: RecordedRequest[];
  close(): Promise<void>;
}

const MAX_RECORDED = 500;
// `[[stream-error:STATUS]]` without `[[cut:N]]`: the stream has begun (its first events were sent) when the error comes.
const STREAM_ERROR_AFTER = 2;
/** The API key a request carried, in whichever header its protocol uses. */
function credentialOf(request: IncomingMessage): string | undefined {
  const header = request.headers.authorization ?? request.headers['x-api-key'] ?? request.headers['x-goog-api-key'];
  return typeof header === 'string' ? header.replace(/^Bearer\s+/i, '') : undefined;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function route(method: string, path: string): { protocol: SimProtocol; stream?: boolean; model?: string } | undefined {
  if (method !== 'POST') return undefined;
  // Any prefix ending in /chat/completions: the simulator also stands in for OpenAI-compatible servers.
  if (path.endsWith('/chat/completions')) return { protocol: openaiProtocol };
  if (path === '/v1/messages') return { protocol: anthropicProtocol };
  const google = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(path);
  if (google) return { protocol: googleProtocol, model: decodeURIComponent(google[1]!), stream: google[2] === 'streamGenerateContent' };
  return undefined;
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  response.end(text);
}

export function createSimulatorHandler(requests: RecordedRequest[] = []) {
  // Plans `[[cut-first:N]]` already cut once (the same request body always gets the same plan id).
  const cutOnce = new Set<string>();
  return async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? '/', 'http://simulator');
    const record: RecordedRequest = { method: request.method ?? 'GET', path: url.pathname, headers: request.headers, body: undefined, aborted: false, finished: false };
    requests.push(record);
    if (requests.length > MAX_RECORDED) requests.splice(0, requests.length - MAX_RECORDED);
    response.on('close', () => {
      record.aborted = !response.writableFinished;
      record.finished = response.writableFinished;
    });

    if (request.method === 'GET' && (url.pathname === '/healthz' || url.pathname === '/')) return sendJson(response, 200, { status: 'ok', simulator: true });
    if (request.method === 'GET' && url.pathname.endsWith('/models')) {
      return sendJson(response, 200, { object: 'list', data: listModels().map((m) => ({ id: m.name, object: 'model', created: 0, owned_by: m.provider })) });
    }
    if (await handleOpenAIMedia(request, response, url.pathname, record)) return;
    const target = route(request.method ?? 'GET', url.pathname);
    if (!target) return sendJson(response, 404, { error: { message: `no route for ${request.method} ${url.pathname}`, type: 'not_found' } });

    const protocol = target.protocol;
    const rawBody = await readBody(request);
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(rawBody) as Record<string, unknown>;
      record.body = body;
    } catch {
      const failure = protocol.error(new SimError(400, 'request body is not valid JSON'));
      return sendJson(response, failure.status, failure.body, failure.headers);
    }

    let delayMs = 0;
    try {
      const input = { ...protocol.parse(body, rawBody, target.model), credential: credentialOf(request) };
      const stream = target.stream ?? input.stream;
      const plan = planResponse(input);
      if (plan.cutFirstAfter !== undefined && !cutOnce.has(plan.id)) {
        if (cutOnce.size >= 10_000) cutOnce.clear(); // a test tool: bounded, not exact forever
        cutOnce.add(plan.id);
        plan.cutAfter = plan.cutFirstAfter;
      }
      delayMs = plan.delayMs;
      if (plan.delayMs > 0) await sleep(plan.delayMs);
      if (!stream) {
        const rendered = protocol.render(plan, input.options);
        if (plan.cutAfter !== undefined) {
          // A connection that dies halfway through the body.
          const text = JSON.stringify(rendered);
          response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
          response.write(text.slice(0, Math.floor(text.length / 2)));
          response.destroy();
          return;
        }
        record.status = 200;
        return sendJson(response, 200, rendered);
      }
      const events = protocol.streamEvents(plan, input.options);
      record.status = 200;
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
      for (const [index, event] of events.entries()) {
        if (plan.streamErrorStatus !== undefined && index >= (plan.cutAfter ?? STREAM_ERROR_AFTER)) {
          response.end(protocol.streamError(new SimError(plan.streamErrorStatus, `simulated error ${plan.streamErrorStatus}`)));
          return;
        }
        if (plan.cutAfter !== undefined && index >= plan.cutAfter) {
          // Let what was written reach the client, then drop the connection mid-stream.
          await new Promise<void>((resolve) => response.write('', () => resolve()));
          response.destroy();
          return;
        }
        if (response.destroyed) return;
        response.write(event);
        if (plan.paceMs > 0) await sleep(plan.paceMs);
      }
      response.end();
    } catch (error) {
      if (!(error instanceof SimError)) throw error;
      const errorDelay = (error as SimError & { delayMs?: number }).delayMs ?? 0;
      if (errorDelay > delayMs) await sleep(errorDelay - delayMs);
      const failure = protocol.error(error);
      record.status = failure.status;
      sendJson(response, failure.status, failure.body, failure.headers);
    }
  };
}

export async function startSimulator(options: { port: number; host?: string }): Promise<Simulator> {
  const requests: RecordedRequest[] = [];
  const handler = createSimulatorHandler(requests);
  const server = createServer((request, response) => {
    handler(request, response).catch(() => {
      if (!response.headersSent) sendJson(response, 500, { error: { message: 'simulator failure', type: 'server_error' } });
      else response.destroy();
    });
  });
  server.keepAliveTimeout = 65_000;
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    server,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
