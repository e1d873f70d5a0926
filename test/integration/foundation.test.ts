import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { Runtime, DefaultLogger } from '@temporalio/worker';
import { startApi, type TestApi } from '../support/harness';
import { uniqueId } from '../support/config';
import { createTenant } from '../support/factories';
import { createWorker } from '../../src/temporal/worker';
import Router from '@koa/router';
import { jsonBody } from '../../src/api/middleware/json-body';
import { DRAIN_LIMIT_BYTES } from '../../src/read-body';
import { BODY_MIN_RATE } from '../../src/api/errors';
import type { AppContext, AppState } from '../../src/api/types';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(async () => {
  await api.close();
});

describe('real services', () => {
  test('a row round-trips through Postgres', async () => {
    const id = uniqueId('acct_');
    await api.deps.db.query('INSERT INTO accounts (id, name) VALUES ($1, $2)', [id, 'Round trip ✓']);
    const { rows } = await api.deps.db.query('SELECT name FROM accounts WHERE id = $1', [id]);
    expect(rows).toEqual([{ name: 'Round trip ✓' }]);
  });

  test('a document is indexed and found in Elasticsearch', async () => {
    const index = `test-foundation-${uniqueId()}`;
    const word = uniqueId('word');
    await api.deps.search.index({ index, id: 'd1', document: { content: `hello ${word}` }, refresh: true });
    const result = await api.deps.search.search({ index, query: { match: { content: word } } });
    expect(result.hits.hits.map((hit) => hit._id)).toEqual(['d1']);
    await api.deps.search.indices.delete({ index });
  });

  test('a trivial workflow is executed by the real worker through the real Temporal server', async () => {
    Runtime.install({ logger: new DefaultLogger('WARN') });
    const { worker, connection } = await createWorker(api.deps);
    const client = await api.deps.temporal.get();
    const result = await worker.runUntil(
      client.workflow.execute('healthCheckWorkflow', {
        taskQueue: api.deps.config.TEMPORAL_TASK_QUEUE,
        workflowId: `test-health/${randomUUID()}`,
        args: ['hi'],
      }),
    );
    await connection.close();
    expect(result).toBe('pong: hi');
  });
});

describe('HTTP basics', () => {
  test('healthz and readyz answer 200 when every service is up', async () => {
    const health = await fetch(`${api.url}/healthz`);
    expect(health.status).toBe(200);
    const ready = await fetch(`${api.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', services: { postgres: 'up', elasticsearch: 'up', temporal: 'up' } });
  });

  test('every response carries X-Request-ID; an acceptable incoming id is kept', async () => {
    const generated = await fetch(`${api.url}/healthz`);
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const kept = await fetch(`${api.url}/healthz`, { headers: { 'X-Request-ID': 'abcdef0123456789abcdef0123456789' } });
    expect(kept.headers.get('x-request-id')).toBe('abcdef0123456789abcdef0123456789');
    const forged = await fetch(`${api.url}/healthz`, { headers: { 'X-Request-ID': 'bad id with spaces' } });
    expect(forged.headers.get('x-request-id')).not.toContain('bad');
    // Only the load balancer's 32-character trace id form is kept (spec); any other id is a UUID.
    const chosen = await fetch(`${api.url}/healthz`, { headers: { 'X-Request-ID': 'my-request-1' } });
    expect(chosen.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  async function expectEnvelope(response: Response, status: number, type: string) {
    expect(response.status).toBe(status);
    const body = await response.json();
    const requestId = response.headers.get('x-request-id');
    expect(requestId).toBeTruthy();
    expect(body).toEqual({ error: { message: expect.any(String), type, code: status, request_id: requestId } });
    return body;
  }

  test('unknown route: 404 envelope', async () => {
    await expectEnvelope(await fetch(`${api.url}/v1/nope`), 404, 'not_found_error');
  });

  test('browsers: a preflight of a known path is 204 with its methods and the asked headers; every answer allows any origin', async () => {
    const preflight = await fetch(`${api.url}/v1/sessions/sesn_x/events`, {
      method: 'OPTIONS',
      headers: { origin: 'https://site.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, x-stainless-os' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    expect(preflight.headers.get('access-control-allow-methods')!.split(', ').sort()).toEqual(['GET', 'HEAD', 'POST']);
    expect(preflight.headers.get('access-control-allow-headers')).toBe('authorization, content-type, x-stainless-os');
    expect(preflight.headers.get('access-control-allow-credentials')).toBeNull();
    // An unknown path is still 404; OPTIONS that is no preflight still 405.
    expect((await fetch(`${api.url}/v1/nope`, { method: 'OPTIONS', headers: { origin: 'https://site.example', 'access-control-request-method': 'GET' } })).status).toBe(404);
    expect((await fetch(`${api.url}/v1/models`, { method: 'OPTIONS' })).status).toBe(405);
    // Answers, errors included, can be read by a page of any origin, request id too.
    for (const response of [await fetch(`${api.url}/v1/models`, { headers: { origin: 'https://site.example' } }), await fetch(`${api.url}/v1/agents`, { headers: { origin: 'https://site.example' } })]) {
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
      expect(response.headers.get('access-control-expose-headers')).toContain('X-Request-ID');
    }
  });

  test('wrong method: 405 envelope with Allow', async () => {
    const response = await fetch(`${api.url}/healthz`, { method: 'DELETE' });
    expect(response.headers.get('allow')).toContain('GET');
    await expectEnvelope(response, 405, 'method_not_allowed');
  });

  test("headers past Node's 16 KB limit, a malformed request, no Host, an unknown Expect: the envelope, not a bare status line", async () => {
    const huge = await fetch(`${api.url}/v1/agents`, { headers: { authorization: `Bearer svc_${'a'.repeat(17_000)}` } });
    await expectEnvelope(huge, 431, 'request_too_large');
    /** Sends raw bytes; returns the status line and the parsed body. */
    const rawExchange = (bytes: string) =>
      new Promise<{ head: string; body: Record<string, any>; requestId: string | undefined; raw: string }>((resolve, reject) => {
        const socket = connect(Number(new URL(api.url).port), '127.0.0.1', () => socket.write(bytes));
        let text = '';
        socket.on('data', (chunk) => (text += chunk.toString()));
        socket.on('end', () => {
          const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
          resolve({ head: text.split('\r\n')[0]!, body, requestId: /\r\nX-Request-ID: (\S+)\r\n/i.exec(text)?.[1], raw: text });
        });
        socket.on('error', reject);
      });
    const cases: Array<[string, string, number]> = [
      ['NOT HTTP AT ALL\r\n\r\n', 'HTTP/1.1 400 Bad Request', 400],
      ['GET /v1/models HTTP/1.1\r\nConnection: close\r\n\r\n', 'HTTP/1.1 400 Bad Request', 400],
      ['GET /v1/models HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nConnection: close\r\n\r\n', 'HTTP/1.1 417 Expectation Failed', 417],
    ];
    for (const [bytes, head, code] of cases) {
      const answer = await rawExchange(bytes);
      expect(answer.head).toBe(head);
      expect(answer.body).toMatchObject({ error: { type: 'invalid_request_error', code, request_id: answer.requestId } });
      // As every answer: both request-id headers, readable by a page of any origin.
      expect(answer.raw).toContain(`\r\nrequest-id: ${answer.requestId}\r\n`);
      expect(answer.raw).toContain('\r\nAccess-Control-Allow-Origin: *\r\n');
    }
    // On the OAuth routes, OAuth's own shape.
    expect((await rawExchange('POST /oauth/token HTTP/1.1\r\nConnection: close\r\n\r\n')).body).toEqual({ error: 'invalid_request', error_description: 'the Host header is required' });
    // HTTP/1.0 needs no Host.
    expect((await rawExchange('GET /v1/models HTTP/1.0\r\n\r\n')).body.object).toBe('list');
    // On the messages route, the provider-native envelope.
    const messages = await rawExchange(`POST /v1/messages HTTP/1.1\r\nHost: x\r\nX-Pad: ${'a'.repeat(17_000)}\r\n\r\n`);
    expect(messages.head).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(messages.body).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: expect.any(String), request_id: messages.requestId } });
    const noHost = await rawExchange('POST /v1/messages HTTP/1.1\r\nConnection: close\r\n\r\n');
    expect(noHost.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: 'the Host header is required' } });
  });

  test('Expect: 100-continue: a refused request is answered before its body is sent; an accepted one gets 100', async () => {
    const port = Number(new URL(api.url).port);
    /** Sends the head only, then the body once 100 Continue arrives; returns what came back. */
    const exchange = (headers: string) =>
      new Promise<string>((resolve, reject) => {
        const body = '{}';
        const socket = connect(port, '127.0.0.1', () =>
          socket.write(`POST /v1/agents HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\nConnection: close\r\n${headers}\r\n`),
        );
        let text = '';
        socket.on('data', (chunk) => {
          text += chunk.toString();
          if (text.startsWith('HTTP/1.1 100 Continue\r\n\r\n') && text.length === 'HTTP/1.1 100 Continue\r\n\r\n'.length) socket.write(body);
        });
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
    const refused = await exchange('');
    expect(refused).toMatch(/^HTTP\/1\.1 401 /);
    const tenant = await createTenant(api.deps.db);
    const accepted = await exchange(`Authorization: Bearer ${tenant.key}\r\n`);
    expect(accepted).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 400 /);
  });

  test('body errors: malformed JSON 400, non-JSON 415, oversize 413', async () => {
    const probe = await startApiWithProbe();
    try {
      const post = (body: string, type = 'application/json') =>
        fetch(`${probe.url}/v1/_probe/echo`, { method: 'POST', headers: { 'content-type': type }, body });
      await expectEnvelope(await post('{"a":'), 400, 'invalid_request_error');
      await expectEnvelope(await post('a=b', 'application/x-www-form-urlencoded'), 415, 'unsupported_media_type');
      await expectEnvelope(await post(JSON.stringify({ pad: 'x'.repeat(5000) })), 413, 'request_too_large');
      const ok = await post('{"a":1}');
      expect(ok.status).toBe(200);
      expect(await ok.json()).toEqual({ received: { a: 1 } });
    } finally {
      await probe.close();
    }
  });

  test('an oversize body still being uploaded: the client gets its 413 and the connection survives; past the drain bound it closes', async () => {
    const probe = await startApiWithProbe();
    const port = Number(new URL(probe.url).port);
    /**
     * Sends an oversize POST (declared or chunked), its body in pieces after the answer may
     * already be out, then a second request on the same connection; returns what came back
     * and how the connection ended.
     */
    const upload = (bodyBytes: number, chunked: boolean) =>
      new Promise<{ text: string; ended: string }>((resolve) => {
        const socket = connect(port, '127.0.0.1');
        const framing = chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${bodyBytes}`;
        let text = '';
        socket.on('data', (chunk) => (text += chunk.toString('latin1')));
        socket.on('close', () => resolve({ text, ended: 'closed' }));
        socket.on('error', (error: NodeJS.ErrnoException) => resolve({ text, ended: error.code ?? 'error' }));
        socket.write(`POST /v1/_probe/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${framing}\r\n\r\n`);
        const piece = Buffer.alloc(1024 * 1024, 0x20);
        void (async () => {
          for (let sent = 0; sent < bodyBytes; sent += piece.length) {
            const bytes = piece.subarray(0, Math.min(piece.length, bodyBytes - sent));
            const ok = socket.write(chunked ? Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n')]) : bytes);
            if (!ok) await new Promise((drained) => socket.once('drain', drained));
            if (socket.destroyed) return;
          }
          socket.write(`${chunked ? '0\r\n\r\n' : ''}POST /v1/_probe/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 7\r\nConnection: close\r\n\r\n{"a":1}`);
        })();
      });
    try {
      for (const chunked of [false, true]) {
        const { text, ended } = await upload(8 * 1024 * 1024, chunked);
        expect(ended).toBe('closed');
        expect(text).toMatch(/^HTTP\/1\.1 413 /);
        // The same connection then served the next request.
        expect(text).toMatch(/HTTP\/1\.1 200 OK\r\n[\s\S]*\{"received":\{"a":1\}\}$/);
      }
      const { text, ended } = await upload(DRAIN_LIMIT_BYTES + 8 * 1024 * 1024, false);
      expect(text).toMatch(/^HTTP\/1\.1 413 /);
      expect(text).not.toMatch(/HTTP\/1\.1 200/);
      expect(['closed', 'ECONNRESET', 'EPIPE']).toContain(ended);
    } finally {
      await probe.close();
    }
  });

  test('a request answered before its body was read (404, 401): the rest is discarded within the drain bound, not to its end', async () => {
    const port = Number(new URL(api.url).port);
    const total = DRAIN_LIMIT_BYTES + 32 * 1024 * 1024;
    for (const path of ['/v1/nope', '/v1/agents']) {
      const outcome = await new Promise<{ text: string; sent: number }>((resolve) => {
        const socket = connect(port, '127.0.0.1');
        let text = '';
        let sent = 0;
        socket.on('data', (chunk) => (text += chunk.toString('latin1')));
        const finish = () => resolve({ text, sent });
        socket.on('close', finish);
        socket.on('error', finish);
        socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${total}\r\n\r\n`);
        const piece = Buffer.alloc(1024 * 1024, 0x20);
        void (async () => {
          while (sent < total && !socket.destroyed) {
            sent += piece.length;
            if (!socket.write(piece)) await new Promise((drained) => socket.once('drain', drained));
          }
          // Everything sent and the connection still open: it would have been read to the end.
          setTimeout(() => socket.destroy(), 3000);
        })();
      });
      expect(outcome.text).toMatch(/^HTTP\/1\.1 (404|401) /);
      expect(outcome.sent).toBeLessThan(total);
    }
  });

  test('a body that stalls is refused with 408 after one rate window, not held for minutes', async () => {
    const tenant = await createTenant(api.deps.db);
    const started = Date.now();
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(new URL(api.url).port), '127.0.0.1', () =>
        socket.write(`POST /v1/agents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${tenant.key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":`),
      );
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    const waited = Date.now() - started;
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({ error: { type: 'invalid_request_error', code: 408 } });
    expect(waited).toBeGreaterThanOrEqual(BODY_MIN_RATE.windowMs - 100);
    expect(waited).toBeLessThan(2 * BODY_MIN_RATE.windowMs);
  }, 40_000);

  test('an unexpected exception becomes a 500 that leaks nothing', async () => {
    const probe = await startApiWithProbe();
    try {
      const response = await fetch(`${probe.url}/v1/_probe/crash`, { method: 'POST' });
      const body = await expectEnvelope(response, 500, 'api_error');
      expect(JSON.stringify(body)).not.toContain('secret internal detail');
      expect(probe.logs.some((line) => line.includes('unhandled error'))).toBe(true);
    } finally {
      await probe.close();
    }
  });

  test('Postgres unreachable: 503 with Retry-After (overloaded_error on /v1/messages), not a 500', async () => {
    const cut = await startApi({ DATABASE_URL: 'postgres://gateway:gateway@127.0.0.1:1/gateway' });
    try {
      const key = { authorization: `Bearer svc_${'a'.repeat(43)}` };
      const agents = await fetch(`${cut.url}/v1/agents`, { headers: key });
      expect(agents.status).toBe(503);
      expect(agents.headers.get('retry-after')).toBe('1');
      expect(((await agents.json()) as { error: { type: string } }).error.type).toBe('service_unavailable');
      const messages = await fetch(`${cut.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': `svc_${'a'.repeat(43)}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(messages.status).toBe(503);
      expect(((await messages.json()) as { error: { type: string } }).error.type).toBe('overloaded_error');
    } finally {
      await cut.close();
    }
  });

  test('access log lines carry method, path, status, duration and the request id', async () => {
    const response = await fetch(`${api.url}/healthz?token=should-not-appear`);
    const id = response.headers.get('x-request-id');
    const line = api.logs.map((l) => JSON.parse(l)).find((entry) => entry.request_id === id && entry.msg === 'request');
    expect(line).toMatchObject({ method: 'GET', path: '/healthz', status: 200, duration_ms: expect.any(Number) });
    expect(api.logs.join('\n')).not.toContain('should-not-appear');
  });
});

/** The api plus a probe router (test-only) that exercises the shared body parser and error path. */
function startApiWithProbe() {
  const probe = new Router<AppState, AppContext>();
  probe.post('/v1/_probe/echo', jsonBody(4096), (ctx) => {
    ctx.body = { received: ctx.request.body };
  });
  probe.post('/v1/_probe/crash', () => {
    throw new Error('secret internal detail');
  });
  return startApi({}, { extraRouters: [probe] });
}
