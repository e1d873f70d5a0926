import { startApi, type TestApi } from '../../support/harness';
import { json } from '../../support/factories';

/**
 * POST /oauth/token client authentication: malformed client credentials are the client's
 * fault (401 invalid_client in the OAuth shape), never a 500; and every 401 carries
 * WWW-Authenticate (RFC 7235 §3.1, spec "Authentication" 8).
 */
let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

const tokenRequest = (form: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(`${api.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  });

async function expectInvalidClient(response: Response): Promise<void> {
  expect(response.status).toBe(401);
  expect(response.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
  expect(await json(response)).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
}

describe('POST /oauth/token: malformed client credentials', () => {
  test('Basic credentials with broken percent-encoding', async () => {
    await expectInvalidClient(await tokenRequest({ grant_type: 'client_credentials' }, { authorization: `Basic ${Buffer.from('%zz:secret').toString('base64')}` }));
  });

  test('a client_id holding U+0000', async () => {
    await expectInvalidClient(await tokenRequest({ grant_type: 'client_credentials', client_id: '\u0000', client_secret: 'x' }));
  });

  test('client_secret_post with an unknown client: 401 still carries WWW-Authenticate', async () => {
    await expectInvalidClient(await tokenRequest({ grant_type: 'client_credentials', client_id: 'client_nope', client_secret: 'x' }));
  });

  test('no client credentials at all', async () => {
    await expectInvalidClient(await tokenRequest({ grant_type: 'client_credentials' }));
  });
});

describe('POST /oauth/token: request parameters are parsed before use', () => {
  const rawTokenRequest = (body: string) =>
    fetch(`${api.url}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });

  test('a repeated parameter is 400 invalid_request (RFC 6749 §3.2), before any client lookup', async () => {
    const response = await rawTokenRequest('grant_type=client_credentials&client_id=a&client_id=b&client_secret=x');
    expect(response.status).toBe(400);
    expect(await json(response)).toEqual({ error: 'invalid_request', error_description: "parameter 'client_id' must not be repeated" });
  });

  test('an oversized parameter is 400 invalid_request naming it', async () => {
    const response = await rawTokenRequest(new URLSearchParams({ grant_type: 'client_credentials', client_id: 'client_x', client_secret: 's'.repeat(600) }).toString());
    expect(response.status).toBe(400);
    const body = await json(response);
    expect(body.error).toBe('invalid_request');
    expect(body.error_description).toMatch(/^client_secret: /);
  });

  test('unknown parameters are ignored: the answer is about the client, not them', async () => {
    await expectInvalidClient(await rawTokenRequest('grant_type=client_credentials&client_id=client_nope&client_secret=x&resource=https%3A%2F%2Fexample.com'));
  });
});
