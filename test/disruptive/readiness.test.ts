import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { startApi, type TestApi } from '../support/harness';

const services = (...args: string[]) =>
  execFileSync('bash', [path.join(__dirname, '../../scripts/services.sh'), ...args], { stdio: 'inherit' });

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(async () => {
  services('start', 'elasticsearch'); // always leave the shared service running
  await api.close();
});

test('/readyz answers 503 naming Elasticsearch while it is stopped, and 200 once it is back', async () => {
  services('stop', 'elasticsearch');
  const down = await fetch(`${api.url}/readyz`);
  expect(down.status).toBe(503);
  const body = (await down.json()) as { message: string; services: unknown };
  expect(body.message).toBe('not reachable: elasticsearch');
  expect(body.services).toEqual({ postgres: 'up', elasticsearch: 'down', temporal: 'up' });

  services('start', 'elasticsearch');
  const up = await fetch(`${api.url}/readyz`);
  expect(up.status).toBe(200);
});
