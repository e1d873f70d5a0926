import Router from '@koa/router';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, InitializeRequestSchema, ListToolsRequestSchema, PingRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import { firstIssue } from '../../first-issue';
import type { Deps } from '../../deps';
import { authenticate } from '../../auth/middleware';
import { buildMcpServer } from '../mcp/tools';
import { ApiError } from '../errors';
import { jsonBody } from '../middleware/json-body';
import { rateLimit } from '../middleware/rate-limit';
import type { AppContext, AppState, Middleware } from '../types';

const MCP_BODY_LIMIT_BYTES = 1024 * 1024;

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
      const server = buildMcpServer(deps, ctx.state.principal!);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      // A client that hangs up mid-call: the transport's close never settles the request it
      // is handling, so the route stops waiting on the close itself (and logs it as such).
      const closed = new Promise<void>((resolve) =>
        ctx.res.once('close', () => {
          if (!ctx.res.writableFinished) ctx.state.clientClosed = true;
          void transport.close();
          void server.close();
          resolve();
        }),
      );
      await server.connect(transport);
      ctx.respond = false; // the transport writes the response itself
      await Promise.race([transport.handleRequest(ctx.req, ctx.res, ctx.request.body), closed]);
    },
  );
  return router;
}

/**
 * The JSON body, where a body that is not JSON is JSON-RPC's parse error (-32700, id null) as
 * the MCP transport answers for JSON that is not JSON-RPC, not the gateway envelope. (Size and
 * media-type refusals keep their 413/415.)
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
        // (Only for requests the transport would take: it answers a wrong Accept with 406 first.)
        const accept = ctx.get('accept');
        const invalid = accept.includes('application/json') && accept.includes('text/event-stream') ? invalidParams(ctx.request.body) : undefined;
        if (invalid) {
          // The SDK would answer an internal error (-32603, quoting its validation) for what is the caller's mistake.
          ctx.body = { jsonrpc: '2.0', id: invalid.id, error: { code: -32602, message: `Invalid params: ${invalid.text}` } };
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
 * SDK would answer valid JSON that is not JSON-RPC with a parse error), or undefined.
 */
function notJsonRpc(body: unknown): string | undefined {
  if (Array.isArray(body) && body.length === 0) return 'an empty batch';
  for (const message of Array.isArray(body) ? body : [body]) {
    if (typeof message !== 'object' || message === null || Array.isArray(message) || (message as { jsonrpc?: unknown }).jsonrpc !== '2.0') {
      return 'each message must be an object with "jsonrpc": "2.0"';
    }
    const m = message as Record<string, unknown>;
    if (!(typeof m.method === 'string' || 'result' in m || 'error' in m)) return 'a message must have a method (or be a response)';
    if ('id' in m && typeof m.id !== 'string' && typeof m.id !== 'number') return 'an id must be a string or a number';
  }
  return undefined;
}

/** The SDK's own schemas of the requests this server answers: their params are checked with them first. */
const REQUEST_SCHEMAS: Record<string, { safeParse(value: unknown): { success: boolean; error?: unknown } }> = {
  initialize: InitializeRequestSchema,
  ping: PingRequestSchema,
  'tools/list': ListToolsRequestSchema,
  'tools/call': CallToolRequestSchema,
};

/** A single request of a known method whose params its schema refuses: its id and the first issue, or undefined. */
function invalidParams(body: unknown): { id: string | number; text: string } | undefined {
  if (Array.isArray(body)) return undefined;
  const message = body as { method?: unknown; id?: string | number };
  const schema = typeof message.method === 'string' ? REQUEST_SCHEMAS[message.method] : undefined;
  if (!schema || message.id === undefined) return undefined;
  const parsed = schema.safeParse(message);
  return parsed.success ? undefined : { id: message.id, text: firstIssue(parsed.error as z.ZodError, 'params').text };
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
