import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { timingSafeEqual } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startApi, type TestApi } from '../../support/harness';
import { uniqueId } from '../../support/config';
import { createKey, createServiceToken, createTenant, json, type Tenant } from '../../support/factories';
import { revokeApiKey } from '../../../src/store/api-keys';
import { connectSiteUser, setSiteStatus } from '../../../src/store/sites';
import { sign } from '../../../src/api/mcp/site-abilities';
import { TOOL_INPUTS } from '../../../src/api/mcp/tools';

/**
 * A small HTTP server playing a registered site: it verifies the gateway's HMAC signature
 * with the site's secret exactly as a plugin would, and serves two abilities.
 */
interface FakeSite {
  url: string;
  secret: string;
  calls: { method: string; path: string; actingUser: string; body: string }[];
  server: Server;
  /** How many slow/drip answers the gateway stopped reading (deadline or cancellation). */
  dripsClosed: number;
}

async function startFakeSite(): Promise<FakeSite> {
  const site: FakeSite = { url: '', secret: '', calls: [], server: undefined as unknown as Server, dripsClosed: 0 };
  const seenNonces = new Set<string>();
  site.server = createServer(async (request: IncomingMessage, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const header = (name: string) => String(request.headers[name] ?? '');
    const timestamp = Number(header('x-gateway-timestamp'));
    const expected = sign(site.secret, {
      method: request.method!,
      pathAndQuery: request.url!,
      actingUser: header('x-gateway-acting-user'),
      body,
      timestamp,
      nonce: header('x-gateway-nonce'),
    });
    const given = header('x-gateway-signature');
    const valid =
      given.length === expected.length &&
      timingSafeEqual(Buffer.from(given), Buffer.from(expected)) &&
      Math.abs(Date.now() / 1000 - timestamp) <= 300 &&
      !seenNonces.has(header('x-gateway-nonce'));
    const send = (status: number, value: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(value));
    };
    if (!valid) return send(401, { code: 'invalid_signature', message: 'bad signature' });
    seenNonces.add(header('x-gateway-nonce'));
    site.calls.push({ method: request.method!, path: request.url!, actingUser: header('x-gateway-acting-user'), body });
    if (request.method === 'GET' && request.url === '/blog/wp-json/gateway/v1/abilities') {
      return send(200, {
        abilities: [
          { name: 'core/get-site-info', label: 'Site info', description: 'Returns the site title', input_schema: { type: 'object' } },
          { name: 'posts/create-draft', label: 'Create draft', input_schema: { type: 'object', properties: { title: { type: 'string' } } } },
        ],
      });
    }
    if (request.method === 'POST' && request.url === '/blog/wp-json/gateway/v1/abilities/run') {
      const { ability, input } = JSON.parse(body) as { ability: string; input: { title?: string } };
      if (ability === 'posts/create-draft') return send(200, { output: { post_id: 42, title: input.title } });
      if (ability === 'slow/drip') {
        // Headers at once, then one byte a second: only a deadline over the body ends it.
        response.writeHead(200, { 'content-type': 'application/json' });
        const drip = setInterval(() => response.write(' '), 1000);
        response.on('close', () => {
          clearInterval(drip);
          site.dripsClosed += 1;
        });
        return;
      }
      if (ability === 'broken/drop') {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.write('{"output": ');
        setTimeout(() => response.destroy(), 50);
        return;
      }
      if (ability === 'deep/output') {
        response.writeHead(200, { 'content-type': 'application/json' });
        return response.end(`{"output": ${'['.repeat(10_000)}${']'.repeat(10_000)}}`);
      }
      return send(404, { code: 'not_found', message: `no ability ${ability}` });
    }
    send(404, { message: 'no route' });
  });
  await new Promise<void>((resolve) => site.server.listen(0, '127.0.0.1', resolve));
  site.url = `http://127.0.0.1:${(site.server.address() as AddressInfo).port}/blog`;
  return site;
}

let api: TestApi;
let tenant: Tenant;
let fakeSite: FakeSite;
let siteId: string;
let hiddenSiteId: string;
const owner = uniqueId('user-');

beforeAll(async () => {
  api = await startApi();
  tenant = await createTenant(api.deps.db);
  fakeSite = await startFakeSite();
  const register = async (body: unknown) => {
    const token = await createServiceToken(api.deps.db, tenant.accountId, uniqueId('client-'));
    const response = await fetch(`${api.url}/v1/sites`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return json(response);
  };
  const registered = await register({ site_url: fakeSite.url, display_name: 'Fake blog', project_id: tenant.projectId });
  fakeSite.secret = registered.site_hmac_secret;
  siteId = registered.site_id;
  hiddenSiteId = (await register({ site_url: `https://${uniqueId('h')}.example.com` })).site_id; // no project: invisible
  await connectSiteUser(api.deps.db, siteId, owner, 'admin');
});
afterAll(async () => {
  fakeSite.server.close();
  await api.close();
});

async function connect(key: string): Promise<Client> {
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${api.url}/v1/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  return client;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const structured = (result: any) => result.structuredContent as any;

describe('POST /v1/mcp with the official MCP SDK client', () => {
  test('initialize, list tools, ping', async () => {
    const client = await connect(tenant.key);
    expect(client.getServerVersion()?.name).toBe('agent-gateway');
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name).sort()).toEqual(['list_account_sites', 'list_site_abilities', 'ping', 'run_site_ability']);
    // The route checks calls against TOOL_INPUTS before the server sees them: the two lists are one.
    expect(Object.keys(TOOL_INPUTS).sort()).toEqual(tools.tools.map((t) => t.name).sort());
    const pong = await client.callTool({ name: 'ping', arguments: {} });
    expect(structured(pong)).toEqual({ message: 'pong', project_id: tenant.projectId });
    await client.close();
  });

  test("list_account_sites: only the key's project, status filter, connection status for the key's owner", async () => {
    const { key } = await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'all', type: 'personal', ownerSubject: owner });
    const client = await connect(key);
    const active = structured(await client.callTool({ name: 'list_account_sites', arguments: {} }));
    expect(active.sites).toEqual([
      { site_id: siteId, site_url: fakeSite.url, display_name: 'Fake blog', status: 'active', cms_connection_status: 'connected', created_at: expect.any(String) },
    ]);
    expect(JSON.stringify(active)).not.toContain(hiddenSiteId);
    expect(structured(await client.callTool({ name: 'list_account_sites', arguments: { status: 'revoked' } })).sites).toEqual([]);
    const bad = await client.callTool({ name: 'list_account_sites', arguments: { status: 'deleted' } });
    expect(bad.isError).toBe(true);
    await client.close();

    const stranger = await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'all', type: 'personal', ownerSubject: uniqueId('other-') });
    const strangerClient = await connect(stranger.key);
    expect(structured(await strangerClient.callTool({ name: 'list_account_sites', arguments: {} })).sites[0].cms_connection_status).toBe('not_connected');
    await strangerClient.close();

    const projectKey = await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'all', type: 'project' });
    const projectClient = await connect(projectKey.key);
    expect(structured(await projectClient.callTool({ name: 'list_account_sites', arguments: {} })).sites[0].cms_connection_status).toBe('no_acting_user');
    await projectClient.close();

    const otherTenant = await createTenant(api.deps.db);
    const otherClient = await connect(otherTenant.key);
    expect(structured(await otherClient.callTool({ name: 'list_account_sites', arguments: {} })).sites).toEqual([]);
    await otherClient.close();
  });

  test('suspended and revoked sites are listed under their status only', async () => {
    const token = await createServiceToken(api.deps.db, tenant.accountId, uniqueId('client-'));
    const registered = await json(await fetch(`${api.url}/v1/sites`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ site_url: `https://${uniqueId('s')}.example.com`, project_id: tenant.projectId }) }));
    await setSiteStatus(api.deps.db, registered.site_id, 'suspended');
    const client = await connect(tenant.key);
    const ids = async (status?: string) => structured(await client.callTool({ name: 'list_account_sites', arguments: status ? { status } : {} })).sites.map((s: { site_id: string }) => s.site_id);
    expect(await ids()).not.toContain(registered.site_id);
    expect(await ids('suspended')).toEqual([registered.site_id]);
    await setSiteStatus(api.deps.db, registered.site_id, 'revoked');
    expect(await ids('revoked')).toEqual([registered.site_id]);
    expect(await ids('suspended')).not.toContain(registered.site_id);
    expect(await ids()).not.toContain(registered.site_id);
    await client.close();
  });

  test('personal key: list and run abilities through an HMAC-signed call to the site, acting as the owner', async () => {
    const { key } = await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'restricted', scopes: { mcp: 'write' }, type: 'personal', ownerSubject: owner });
    const client = await connect(key);
    const listed = structured(await client.callTool({ name: 'list_site_abilities', arguments: { site_id: siteId } }));
    expect(listed.abilities.map((a: { name: string }) => a.name)).toEqual(['core/get-site-info', 'posts/create-draft']);
    const ran = await client.callTool({ name: 'run_site_ability', arguments: { site_id: siteId, ability: 'posts/create-draft', input: { title: 'Hello' } } });
    expect(ran.isError).toBeFalsy();
    expect(structured(ran)).toEqual({ site_id: siteId, ability: 'posts/create-draft', output: { post_id: 42, title: 'Hello' } });
    const last = fakeSite.calls[fakeSite.calls.length - 1]!;
    expect(last).toMatchObject({ method: 'POST', path: '/blog/wp-json/gateway/v1/abilities/run', actingUser: owner });
    expect(JSON.parse(last.body)).toEqual({ ability: 'posts/create-draft', input: { title: 'Hello' } });

    const missing = await client.callTool({ name: 'run_site_ability', arguments: { site_id: siteId, ability: 'nope/nothing' } });
    expect(missing.isError).toBe(true);
    expect(structured(missing).error.code).toBe('not_found');
    await client.close();
  });

  test('a site that drips its answer is cut off at 15 s with code timeout; one that drops the connection is unavailable', async () => {
    const { key } = await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'all', type: 'personal', ownerSubject: owner });
    const client = await connect(key);
    const started = Date.now();
    const slow = await client.callTool({ name: 'run_site_ability', arguments: { site_id: siteId, ability: 'slow/drip' } }, undefined, { timeout: 60_000 });
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(slow.isError).toBe(true);
    expect(structured(slow).error).toMatchObject({ code: 'timeout', message: 'the site did not answer in time' });
    const dropped = await client.callTool({ name: 'run_site_ability', arguments: { site_id: siteId, ability: 'broken/drop' } });
    expect(structured(dropped).error).toMatchObject({ code: 'unavailable' });
    await client.close();
  }, 40_000);

  test('a client that hangs up during a tool call ends its request at once: logged as 499, not left pending, and the site call is stopped', async () => {
    const { key } = await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'all', type: 'personal', ownerSubject: owner });
    const logsBefore = api.logs.length;
    const dripsBefore = fakeSite.dripsClosed;
    const controller = new AbortController();
    const call = fetch(`${api.url}/v1/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'run_site_ability', arguments: { site_id: siteId, ability: 'slow/drip' } } }),
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 500);
    await expect(call).rejects.toThrow();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const access = api.logs.slice(logsBefore).map((line) => JSON.parse(line)).find((l) => l.msg === 'request' && l.path === '/v1/mcp');
    expect(access).toMatchObject({ status: 499 });
    // Not left running until its 15 s deadline.
    expect(fakeSite.dripsClosed).toBe(dripsBefore + 1);
  });

  test('an answer nested too deep to pass on is the site failing (execution_failed); a site id that cannot be one is not_found', async () => {
    const { key } = await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'all', type: 'personal', ownerSubject: owner });
    const client = await connect(key);
    const deep = await client.callTool({ name: 'run_site_ability', arguments: { site_id: siteId, ability: 'deep/output' } });
    expect(structured(deep).error).toMatchObject({ code: 'execution_failed', message: expect.stringContaining('deeper than 128 levels') });
    const nul = await client.callTool({ name: 'list_site_abilities', arguments: { site_id: 'site_\u0000' } });
    expect(structured(nul).error).toMatchObject({ code: 'not_found' });
    await client.close();
  });

  test.each([
    ['an HTML page', 'text/html', '<h1>Not Found</h1>'],
    ["WordPress's rest_no_route", 'application/json', JSON.stringify({ code: 'rest_no_route', message: 'No route was found matching the URL and request method.', data: { status: 404 } })],
  ])("a site whose abilities endpoint is missing (a 404 with %s: the plugin not installed) is unavailable, not not_found", async (_, type, page) => {
    const bare = createServer((_request, response) => {
      response.writeHead(404, { 'content-type': type });
      response.end(page);
    });
    await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
    try {
      const token = await createServiceToken(api.deps.db, tenant.accountId, uniqueId('client-'));
      const url = `http://127.0.0.1:${(bare.address() as AddressInfo).port}/site`;
      const registered = await json(await fetch(`${api.url}/v1/sites`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ site_url: url, project_id: tenant.projectId }) }));
      await connectSiteUser(api.deps.db, registered.site_id, owner, 'admin');
      const { key } = await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'restricted', scopes: { mcp: 'write' }, type: 'personal', ownerSubject: owner });
      const client = await connect(key);
      const result = await client.callTool({ name: 'list_site_abilities', arguments: { site_id: registered.site_id } });
      expect(result.isError).toBe(true);
      expect(structured(result).error).toEqual({ code: 'unavailable', message: expect.stringMatching(/404.*plugin installed/) });
      await client.close();
    } finally {
      bare.close();
    }
  });

  test('a site that cannot verify the signature (wrong secret) refuses: the tool reports the error', async () => {
    const { key } = await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'all', type: 'personal', ownerSubject: owner });
    const real = fakeSite.secret;
    fakeSite.secret = 'f'.repeat(64);
    try {
      const client = await connect(key);
      const result = await client.callTool({ name: 'list_site_abilities', arguments: { site_id: siteId } });
      expect(result.isError).toBe(true);
      expect(structured(result).error.code).toBe('invalid_signature');
      await client.close();
    } finally {
      fakeSite.secret = real;
    }
  });

  test('an unexpected failure inside a tool (a site secret that no longer decrypts) is a fixed internal_error, with nothing of the cause', async () => {
    const { key } = await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'all', type: 'personal', ownerSubject: owner });
    const stored = (await api.deps.db.query('SELECT hmac_secret_encrypted FROM sites WHERE site_id = $1', [siteId])).rows[0].hmac_secret_encrypted;
    // As after the gateway secret was rotated: the stored ciphertext no longer authenticates.
    await api.deps.db.query('UPDATE sites SET hmac_secret_encrypted = $2 WHERE site_id = $1', [siteId, stored.slice(0, -4) + (stored.endsWith('AAAA') ? 'BBBB' : 'AAAA')]);
    try {
      const client = await connect(key);
      const result = await client.callTool({ name: 'list_site_abilities', arguments: { site_id: siteId } });
      expect(result.isError).toBe(true);
      expect(structured(result)).toEqual({ error: { code: 'internal_error', message: 'the tool failed unexpectedly' } });
      expect(JSON.stringify(result.content)).not.toMatch(/authenticate|decrypt|cipher/i);
      await client.close();
    } finally {
      await api.deps.db.query('UPDATE sites SET hmac_secret_encrypted = $2 WHERE site_id = $1', [siteId, stored]);
    }
  });

  test('ability tools: project keys get a clear permission error; other checks', async () => {
    const projectKey = await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'all', type: 'project' });
    const client = await connect(projectKey.key);
    for (const name of ['list_site_abilities', 'run_site_ability']) {
      const result = await client.callTool({ name, arguments: { site_id: siteId, ability: 'core/get-site-info' } });
      expect(result.isError).toBe(true);
      expect(structured(result).error.code).toBe('permission_denied');
      expect(structured(result).error.message).toMatch(/personal MCP key/);
    }
    await client.close();
    const callsBefore = fakeSite.calls.length;

    const stranger = await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'all', type: 'personal', ownerSubject: uniqueId('x') });
    const strangerClient = await connect(stranger.key);
    const notConnected = await strangerClient.callTool({ name: 'list_site_abilities', arguments: { site_id: siteId } });
    expect(structured(notConnected).error.message).toMatch(/not connected/);
    const hidden = await strangerClient.callTool({ name: 'list_site_abilities', arguments: { site_id: hiddenSiteId } });
    expect(structured(hidden).error.code).toBe('not_found');
    await strangerClient.close();
    expect(fakeSite.calls.length).toBe(callsBefore); // none of these reached the site
  });
});

describe('POST /v1/mcp: credentials', () => {
  const rawCall = (key: string | undefined, body: unknown = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }) =>
    fetch(`${api.url}/v1/mcp`, {
      method: 'POST',
      headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(body),
    });

  test('a raw initialize over HTTP answers JSON-RPC 2.0 with the server info', async () => {
    const response = await rawCall(tenant.key);
    expect(response.status).toBe(200);
    const body = await json(response);
    expect(body).toMatchObject({ jsonrpc: '2.0', id: 1, result: { serverInfo: { name: 'agent-gateway' } } });
  });

  test('a body that is not JSON is a JSON-RPC parse error (-32700); JSON that is not JSON-RPC 2.0 is an Invalid Request (-32600)', async () => {
    for (const body of ['{"jsonrpc":"2.0","id":1,"method":"initia', '{"jsonrpc":"2.0","params":"\\ud800"}']) {
      const response = await fetch(`${api.url}/v1/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body,
      });
      expect(response.status).toBe(400);
      expect(await json(response)).toEqual({ jsonrpc: '2.0', error: { code: -32700, message: expect.stringMatching(/^Parse error: /) }, id: null });
    }
    for (const body of [{ hello: 'world' }, { jsonrpc: '1.0', id: 1, method: 'ping' }, 'hello', [], { jsonrpc: '2.0', id: null, method: 'ping' }, { jsonrpc: '2.0', id: 1 }]) {
      const notRpc = await rawCall(tenant.key, body);
      expect([notRpc.status, (await json(notRpc)).error]).toEqual([400, { code: -32600, message: expect.stringMatching(/^Invalid Request: /) }]);
    }
  });

  test('malformed params of a known method are Invalid params (-32602) for that request id, naming the first issue', async () => {
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['tools/call', {}, /^Invalid params: params: /],
      ['tools/call', { params: {} }, /^Invalid params: params\.name: /],
      ['tools/call', { params: { name: 7 } }, /^Invalid params: params\.name: /],
      ['tools/call', { params: { name: 'ping', arguments: 'x' } }, /^Invalid params: params\.arguments: /],
      ['tools/list', { params: { cursor: 5 } }, /^Invalid params: params\.cursor: /],
      ['initialize', { params: {} }, /^Invalid params: params\./],
    ];
    for (const [method, extra, message] of cases) {
      const response = await rawCall(tenant.key, { jsonrpc: '2.0', id: 41, method, ...extra });
      expect(response.status).toBe(200);
      expect(await json(response)).toEqual({ jsonrpc: '2.0', id: 41, error: { code: -32602, message: expect.stringMatching(message) } });
    }
    // A request the transport would not take at all keeps its answer: a wrong Accept is 406 first.
    const wrongAccept = await fetch(`${api.url}/v1/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 41, method: 'tools/call', params: {} }),
    });
    expect(wrongAccept.status).toBe(406);
  });

  test('batches: answered with an array (one request too); bad params and unknown tools answered per request, the rest run; a repeated id refuses the batch', async () => {
    const ping = (id: number) => ({ jsonrpc: '2.0', id, method: 'ping' });
    const single = await rawCall(tenant.key, [ping(1)]);
    expect([single.status, await json(single)]).toEqual([200, [{ jsonrpc: '2.0', id: 1, result: {} }]]);

    const mixed = await rawCall(tenant.key, [
      ping(1),
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: {} },
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'nosuch', arguments: {} } },
      { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'list_account_sites', arguments: { status: 'bogus' } } },
      { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'ping', arguments: {} } },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
    ]);
    expect(mixed.status).toBe(200);
    const replies = (await json(mixed)) as Array<Record<string, any>>;
    const byId = new Map(replies.map((reply) => [reply.id, reply]));
    expect(replies).toHaveLength(5);
    expect(byId.get(1)).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    expect(byId.get(2)!.error).toEqual({ code: -32602, message: expect.stringMatching(/^Invalid params: params\.name: /) });
    expect(byId.get(3)!.error).toEqual({ code: -32602, message: "Invalid params: unknown tool 'nosuch'" });
    // A tool's arguments its schema refuses: the tool error shape every tool error has.
    expect(byId.get(4)!.result).toMatchObject({ isError: true, structuredContent: { error: { code: 'invalid_input', message: expect.stringMatching(/^status: /) } } });
    expect(byId.get(5)!.result.structuredContent).toMatchObject({ message: 'pong' });
    // An ability name has a length limit (it is logged with each run).
    const long = await rawCall(tenant.key, { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'run_site_ability', arguments: { site_id: 'site_x', ability: 'a'.repeat(257) } } });
    expect((await json(long)).result).toMatchObject({ isError: true, structuredContent: { error: { code: 'invalid_input', message: expect.stringMatching(/^ability: /) } } });

    const twice = await rawCall(tenant.key, [ping(7), ping(7)]);
    expect([twice.status, (await json(twice)).error]).toEqual([400, { code: -32600, message: 'Invalid Request: the request id 7 appears twice in the batch' }]);
    // JSON that is not JSON-RPC by the MCP schema (a fractional id) is an Invalid Request too, not a parse error.
    const fractional = await rawCall(tenant.key, { jsonrpc: '2.0', id: 1.5, method: 'ping' });
    expect([fractional.status, (await json(fractional)).error.code]).toEqual([400, -32600]);
  });

  test('a batch over 100 messages is refused whole; inherited names are unknown tools; a request the transport refuses as a whole is not answered in part', async () => {
    const ping = (id: number) => ({ jsonrpc: '2.0', id, method: 'ping' });
    const unknown = (id: number, name = 'nosuch') => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });
    const big = await rawCall(tenant.key, [...Array.from({ length: 60 }, (_, i) => unknown(i)), ...Array.from({ length: 41 }, (_, i) => ping(100 + i))]);
    expect([big.status, (await json(big)).error]).toEqual([400, { code: -32600, message: 'Invalid Request: a batch holds at most 100 messages' }]);
    for (const name of ['constructor', 'toString', '__proto__']) {
      expect((await json(await rawCall(tenant.key, unknown(1, name)))).error).toEqual({ code: -32602, message: `Invalid params: unknown tool '${name}'` });
    }
    const badVersion = await fetch(`${api.url}/v1/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '1999-01-01' },
      body: JSON.stringify([unknown(1), ping(2)]),
    });
    expect([badVersion.status, (await json(badVersion)).error.message]).toEqual([400, expect.stringMatching(/Unsupported protocol version/)]);
    const notification = await rawCall(tenant.key, { jsonrpc: '2.0', method: 'notifications/initialized' });
    expect([notification.status, notification.headers.get('content-type'), await notification.text()]).toEqual([202, null, '']);
  });

  test('initialize says the tool list never changes (no server stream could announce it)', async () => {
    const body = await json(await rawCall(tenant.key));
    expect(body.result.capabilities.tools).toEqual({ listChanged: false });
  });

  test('revoked key: 401 {error: invalid_token, error_description}', async () => {
    const { key, id } = await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'all' });
    expect((await rawCall(key)).status).toBe(200);
    await revokeApiKey(api.deps.db, id);
    const response = await rawCall(key);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
    expect(await json(response)).toEqual({ error: 'invalid_token', error_description: expect.any(String) });
  });

  test('malformed or missing key: 401 invalid_token', async () => {
    expect(await json(await rawCall('sk_' + 'a'.repeat(43)))).toEqual({ error: 'invalid_token', error_description: expect.any(String) });
    const missing = await rawCall(undefined);
    expect(missing.status).toBe(401);
    expect((await json(missing)).error).toBe('invalid_token');
  });

  test('the SDK client surfaces the 401 of a revoked key', async () => {
    const { key, id } = await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'all' });
    await revokeApiKey(api.deps.db, id);
    await expect(connect(key)).rejects.toThrow(/401|invalid_token|Unauthorized/i);
  });

  test.each([
    ['read_only preset', { preset: 'read_only' as const }],
    ['mcp at read', { preset: 'restricted' as const, scopes: { mcp: 'read' as const } }],
    ['no mcp scope', { preset: 'restricted' as const, scopes: { chat: 'write' as const } }],
  ])('%s: 403 permission_error naming the mcp scope', async (_label, options) => {
    const { key } = await createKey(api.deps.db, { projectId: tenant.projectId, ...options });
    const response = await rawCall(key);
    expect(response.status).toBe(403);
    const body = await json(response);
    expect(body.error).toMatchObject({ type: 'permission_error', code: 403 });
    expect(body.error.message).toContain('mcp:write');
  });

  test('site service tokens are not MCP credentials', async () => {
    const token = await createServiceToken(api.deps.db, tenant.accountId);
    expect((await rawCall(token)).status).toBe(403);
  });

  test('GET is 405: the endpoint is stateless and offers no server stream', async () => {
    const response = await fetch(`${api.url}/v1/mcp`, { headers: { authorization: `Bearer ${tenant.key}` } });
    expect(response.status).toBe(405);
  });
});

describe('sites on internal addresses, where private addresses are not allowed (every environment but development)', () => {
  let guarded: TestApi;
  beforeAll(async () => {
    guarded = await startApi({ SITE_ALLOW_PRIVATE_ADDRESSES: 'false' });
  });
  afterAll(() => guarded.close());

  test.each(['http://127.0.0.1:9201/', 'http://[::1]:7233/', 'http://localhost:8080/', 'http://169.254.169.254/latest/meta-data/', 'http://10.0.0.5/', 'http://0x7f000001:54329/'])(
    'registering %s is 400 naming site_url',
    async (siteUrl) => {
      const token = await createServiceToken(guarded.deps.db, tenant.accountId, uniqueId('client-'));
      const response = await fetch(`${guarded.url}/v1/sites`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ site_url: siteUrl }) });
      expect(response.status).toBe(400);
      expect((await json(response)).error.message).toMatch(/^site_url: must name a public host/);
    },
  );

  test('a site already registered on an internal address is not called: the ability tools answer that it could not be reached', async () => {
    const { key } = await createKey(guarded.deps.db, { projectId: tenant.projectId, preset: 'all', type: 'personal', ownerSubject: owner });
    const client = new Client({ name: 'test-client', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${guarded.url}/v1/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
    const callsBefore = fakeSite.calls.length;
    const result = await client.callTool({ name: 'list_site_abilities', arguments: { site_id: siteId } });
    expect(result.isError).toBe(true);
    expect(structured(result).error).toMatchObject({ code: 'unavailable', message: 'the site could not be reached' });
    expect(fakeSite.calls.length).toBe(callsBefore);
    await client.close();
  });
});
