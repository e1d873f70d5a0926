import Router from '@koa/router';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, InitializeRequestSchema, JSONRPCMessageSchema, ListToolsRequestSchema, PingRequestSchema, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { firstIssue } from '../../first-issue';
import type { Deps } from '../../deps';
import { authenticate } from '../../auth/middleware';
import { buildMcpServer, TOOL_INPUTS, toolError } from '../mcp/tools';
import { ApiError } from '../errors';
import { jsonBody } from '../middleware/json-body';
import { rateLimit } from '../middleware/rate-limit';
import type { AppContext, AppState, Middleware } from '../types';

const MCP_BODY_LIMIT_BYTES = 1024 * 1024;
/** Messages in one batch (the SDK transport's own limit, applied to the whole batch before any is answered). */
const MAX_BATCH = 100;

/**
 * POST /v1/mcp: MCP over Streamable HTTP, stateless (no session id; every POST carries its
 * own JSON-RPC message and gets a JSON response). API keys only, with scope `mcp` at write
 * (the `all` preset has it). GET and DELETE answer 405: there is no server-initiated stream
 * and no session to end.
 */
export function mcpRouter(deps: Deps): Router<AppState, AppContext> {
  const router = new Router<AppState, AppContext>();
  router.post(
    '/v1/mcp',
    rateLimit(deps),
    oauthStyleUnauthorized(),
    authenticate(deps, { scope: 'mcp', access: 'write', accept: ['api_key'] }),
    jsonRpcBody(MCP_BODY_LIMIT_BYTES),
    async (ctx) => {
      const body = ctx.request.body;
      const batch = Array.isArray(body);
      // Requests the gateway answers itself (params or arguments the schemas refuse, unknown
      // tools): nothing of them runs. The rest go to the MCP server. (Only for a body the
      // transport takes: its own refusals of the whole request, a wrong Accept say, come first.)
      const messages: unknown[] = batch ? body : [body];
      const checked = !transportRefuses(ctx, messages);
      const replies: unknown[] = [];
      const forward: unknown[] = [];
      for (const message of messages) {
        const answer = checked ? preAnswer(message) : undefined;
        if (answer) replies.push(answer);
        else forward.push(message);
      }
      if (forward.length > 0) {
        const response = await handleWithServer(deps, ctx, batch ? forward : forward[0]);
        if (!response) return; // the client went away
        const text = await response.text();
        if (response.status !== 200 || !response.headers.get('content-type')?.includes('application/json')) {
          // The transport's own refusals (406, 415, ...) and a notifications-only 202, as it gave them,
          // unless the gateway answered some requests of the batch itself.
          if (replies.length === 0 || response.status !== 202) {
            response.headers.forEach((value, name) => ctx.set(name, value));
            ctx.body = text || null; // (an explicit null: a 202 has no body, and no content type either)
            ctx.status = response.status; // (after the body: a null body would make it 204)
            return;
          }
        } else {
          const answered = JSON.parse(text) as unknown;
          replies.push(...(Array.isArray(answered) ? answered : [answered]));
        }
      }
      // A batch is answered with an array, a one-request batch too (JSON-RPC 2.0, section 6).
      ctx.body = replies.length > 0 ? (batch ? replies : replies[0]) : null;
      ctx.status = replies.length > 0 ? 200 : 202;
    },
  );
  return router;
}

/**
 * One MCP server and stateless transport per request, bound to the caller's key; the
 * transport's answer as a web Response, or undefined when the client hung up first (the
 * transport's close never settles the request it is handling).
 */
async function handleWithServer(deps: Deps, ctx: AppContext, parsedBody: unknown): Promise<Response | undefined> {
  const headers = new Headers();
  for (const [name, value] of Object.entries(ctx.req.headers)) {
    // (The body is handed over parsed: its length and framing no longer apply.)
    if (value === undefined || name === 'content-length' || name === 'transfer-encoding') continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  // A fixed origin: the transport reads nothing of the URL, and a Host header or an
  // absolute-form request line must not be able to make it unparseable.
  const request = new Request('http://gateway.invalid/v1/mcp', { method: 'POST', headers });
  const server = buildMcpServer(deps, ctx.state.principal!);
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  try {
    const closed = new Promise<undefined>((resolve) =>
      ctx.res.once('close', () => {
        if (!ctx.res.writableFinished) ctx.state.clientClosed = true;
        void transport.close(); // aborts the handlers in flight (their site calls included)
        resolve(undefined);
      }),
    );
    await server.connect(transport);
    return await Promise.race([transport.handleRequest(request, { parsedBody }), closed]);
  } finally {
    void transport.close();
    void server.close();
  }
}

/**
 * Whether the transport refuses the request as a whole (so the gateway answers none of its
 * messages itself): a wrong Accept (406), a body not sent as application/json (415), an
 * unsupported Mcp-Protocol-Version on a request after initialization, or an initialize
 * that is not alone (400). These mirror the SDK transport's own checks (its
 * WebStandardStreamableHTTPServerTransport.handlePostRequest and validateProtocolVersion,
 * @modelcontextprotocol/sdk 1.32); test/integration/mcp/mcp.test.ts checks the Accept and
 * protocol-version cases against the transport.
 */
function transportRefuses(ctx: AppContext, messages: unknown[]): boolean {
  const accept = ctx.get('accept');
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return true;
  if (ctx.request.type !== 'application/json') return true;
  const initializing = messages.some((message) => (message as { method?: unknown }).method === 'initialize');
  if (initializing) return messages.length > 1;
  const version = ctx.get('mcp-protocol-version');
  return version !== '' && !SUPPORTED_PROTOCOL_VERSIONS.includes(version);
}

/**
 * The JSON body, where a body that is not JSON is JSON-RPC's parse error (-32700, id null),
 * and JSON that is not JSON-RPC 2.0 an invalid request (-32600), not the gateway envelope.
 * (Size and media-type refusals keep their 413/415.)
 */
function jsonRpcBody(limitBytes: number): Middleware {
  const parse = jsonBody(limitBytes);
  return async (ctx, next) => {
    let parsed = false;
    try {
      await parse(ctx, () => {
        parsed = true;
        const problem = notJsonRpc(ctx.request.body);
        if (problem) {
          ctx.status = 400;
          ctx.body = { jsonrpc: '2.0', error: { code: -32600, message: `Invalid Request: ${problem}` }, id: null };
          return Promise.resolve();
        }
        return next();
      });
    } catch (error) {
      if (parsed || !(error instanceof ApiError) || error.status !== 400) throw error;
      ctx.status = 400;
      ctx.body = { jsonrpc: '2.0', error: { code: -32700, message: `Parse error: ${error.message}` }, id: null };
    }
  };
}

/**
 * Why a JSON body is not JSON-RPC 2.0 (an Invalid Request, -32600, by the JSON-RPC spec; the
 * SDK would answer valid JSON that is not JSON-RPC with a parse error), or undefined. A batch
 * may not use one request id twice: its answers could not be told apart.
 */
function notJsonRpc(body: unknown): string | undefined {
  if (Array.isArray(body) && body.length === 0) return 'an empty batch';
  if (Array.isArray(body) && body.length > MAX_BATCH) return `a batch holds at most ${MAX_BATCH} messages`;
  const ids = new Set<string | number>();
  for (const message of Array.isArray(body) ? body : [body]) {
    if (typeof message !== 'object' || message === null || Array.isArray(message) || (message as { jsonrpc?: unknown }).jsonrpc !== '2.0') {
      return 'each message must be an object with "jsonrpc": "2.0"';
    }
    const m = message as Record<string, unknown>;
    if (!(typeof m.method === 'string' || 'result' in m || 'error' in m)) return 'a message must have a method (or be a response)';
    if ('id' in m && typeof m.id !== 'string' && typeof m.id !== 'number') return 'an id must be a string or a number';
    const parsed = JSONRPCMessageSchema.safeParse(message);
    if (!parsed.success) return firstIssue(parsed.error as z.ZodError, 'message').text;
    if (typeof m.method === 'string' && (typeof m.id === 'string' || typeof m.id === 'number')) {
      if (ids.has(m.id)) return `the request id ${JSON.stringify(m.id)} appears twice in the batch`;
      ids.add(m.id);
    }
  }
  return undefined;
}

/** Each tool's arguments as the SDK reads them (unknown keys dropped). */
const TOOL_ARGUMENTS: Record<string, z.ZodType> = Object.fromEntries(Object.entries(TOOL_INPUTS).map(([name, input]) => [name, z.object(input)]));

/** The SDK's own schemas of the requests this server answers: their params are checked with them first. */
const REQUEST_SCHEMAS: Record<string, { safeParse(value: unknown): { success: boolean; error?: unknown } }> = {
  initialize: InitializeRequestSchema,
  ping: PingRequestSchema,
  'tools/list': ListToolsRequestSchema,
  'tools/call': CallToolRequestSchema,
};

/**
 * The gateway's own answer to a request, or undefined to let the MCP server answer it:
 * params the method's schema refuses are -32602 (the SDK would answer an internal error,
 * -32603, quoting its validation), as is an unknown tool (a protocol error, by the MCP spec);
 * a tool's arguments that its input schema refuses are the tool error `invalid_input`, in the
 * shape of every tool error (the SDK would answer plain text).
 */
function preAnswer(message: unknown): Record<string, unknown> | undefined {
  const m = message as { method?: unknown; id?: string | number; params?: { name?: unknown; arguments?: unknown } };
  const schema = typeof m.method === 'string' ? REQUEST_SCHEMAS[m.method] : undefined;
  if (!schema || m.id === undefined) return undefined;
  const parsed = schema.safeParse(message);
  if (!parsed.success) return { jsonrpc: '2.0', id: m.id, error: { code: -32602, message: `Invalid params: ${firstIssue(parsed.error as z.ZodError, 'params').text}` } };
  if (m.method !== 'tools/call') return undefined;
  const name = String(m.params?.name);
  if (!Object.hasOwn(TOOL_ARGUMENTS, name)) return { jsonrpc: '2.0', id: m.id, error: { code: -32602, message: `Invalid params: unknown tool '${name}'` } };
  const args = TOOL_ARGUMENTS[name]!.safeParse(m.params?.arguments ?? {});
  return args.success ? undefined : { jsonrpc: '2.0', id: m.id, result: toolError('invalid_input', firstIssue(args.error, 'arguments').text) };
}

/**
 * MCP clients read 401s as OAuth bearer errors (RFC 6750): `{error: "invalid_token",
 * error_description}` with the WWW-Authenticate challenge, instead of the gateway envelope.
 */
function oauthStyleUnauthorized(): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 401) throw error;
      ctx.status = 401;
      for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
      ctx.body = { error: 'invalid_token', error_description: error.message };
    }
  };
}
