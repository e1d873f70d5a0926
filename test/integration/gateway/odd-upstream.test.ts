import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startApi, type TestApi } from '../../support/harness';
import { createTenant, json, type Tenant } from '../../support/factories';

/**
 * An upstream that answers, but not with what was asked for (an HTML page from a proxy in
 * between, an empty list of choices, an error with no body). The real OpenAI adapter reads
 * it; the client gets the gateway's envelope, and nothing is billed.
 */
let upstream: Server;
let api: TestApi;
let tenant: Tenant;
beforeAll(async () => {
  upstream = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk) => (text += chunk));
    request.on('end', () => {
      if (request.url === '/v1/audio/speech') {
        response.writeHead(200, { 'content-type': 'text/html' }).end('<html>a captive portal</html>');
      } else if (request.url === '/v1/chat/completions' && text.includes('empty-500')) {
        response.writeHead(500, { 'content-type': 'application/json' }).end();
      } else if (request.url === '/v1/chat/completions' && text.includes('stalled-500')) {
        // The body its Content-Length promises never comes (as with a 304 that declares one).
        response.writeHead(500, { 'content-type': 'application/json', 'content-length': '100' });
        response.write('{"error":');
      } else if (request.url === '/v1/chat/completions' && text.includes('empty-429')) {
        response.writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' }).end();
      } else {
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 'x', object: 'chat.completion', model: 'gpt-4o', choices: [], usage: { prompt_tokens: 5, completion_tokens: 0 } }));
      }
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
  api = await startApi({ OPENAI_BASE_URL: url, OPENAI_API_KEY: 'sk-odd-upstream', RATE_LIMIT_ENABLED: 'false' });
  tenant = await createTenant(api.deps.db);
});
afterAll(async () => {
  await api.close();
  upstream.close();
});

const post = (path: string, body: unknown) =>
  fetch(`${api.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
const billed = async (requestId: string | null) => {
  await new Promise((resolve) => setTimeout(resolve, 200));
  return (await api.deps.db.query('SELECT 1 FROM usage_records WHERE request_id = $1', [requestId])).rows.length > 0;
};

test('speech answered with a page that is not audio: 502, not relayed, not billed', async () => {
  const response = await post('/v1/audio/speech', { model: 'openai/tts-1', input: 'hello', voice: 'alloy' });
  expect(response.status).toBe(502);
  expect((await json(response)).error).toMatchObject({ type: 'upstream_error', code: 502 });
  expect(await billed(response.headers.get('x-request-id'))).toBe(false);
});

test('a completion without any choice: 502, not an empty 200', async () => {
  const response = await post('/v1/chat/completions', { model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
  expect(response.status).toBe(502);
  expect((await json(response)).error).toMatchObject({ type: 'upstream_error', code: 502 });
  expect(await billed(response.headers.get('x-request-id'))).toBe(false);
});

test('an upstream error with no body: its status in the gateway envelope', async () => {
  const response = await post('/v1/chat/completions', { model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'empty-500' }] });
  expect(response.status).toBe(500);
  expect((await json(response)).error).toMatchObject({ type: 'upstream_error', code: 500, message: 'the model provider returned an error' });
});

test('an upstream rate limit with no body keeps its Retry-After', async () => {
  const response = await post('/v1/chat/completions', { model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'empty-429' }] });
  expect(response.status).toBe(429);
  expect(response.headers.get('retry-after')).toBe('7');
  expect((await json(response)).error).toMatchObject({ type: 'upstream_error', code: 429 });
});

test('an upstream error whose body never finishes is answered once the short wait for it ends, not after the body timeout', async () => {
  const response = await post('/v1/chat/completions', { model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'stalled-500' }] });
  expect(response.status).toBe(500);
  expect((await json(response)).error).toMatchObject({ type: 'upstream_error', code: 500 });
}, 30_000);
