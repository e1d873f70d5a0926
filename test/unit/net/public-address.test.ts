import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fetch } from 'undici';
import { isPublicAddress, namesNonPublicHost, publicOnlyDispatcher } from '../../../src/net/public-address';

describe('isPublicAddress', () => {
  test.each(['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1', '::1', '::', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '::ffff:8.8.8.8', '::7f00:1', '2002:c0a8:101::1', '2001:0:4136:e378::1', 'fec0::1', 'not an ip'])('%s is not public', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });
  test.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '2606:4700:4700::1111'])('%s is public', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });
});

describe('namesNonPublicHost', () => {
  test.each(['http://127.0.0.1:9201/', 'http://[::1]/', 'http://localhost:8080/', 'http://api.localhost/', 'http://LOCALHOST./', 'http://169.254.169.254/latest', 'http://0x7f000001/', 'http://2130706433/'])('%s', (url) => {
    expect(namesNonPublicHost(new URL(url))).toBe(true);
  });
  test.each(['https://example.com/', 'http://8.8.8.8/', 'https://localhost.example.com/'])('%s is left to resolution', (url) => {
    expect(namesNonPublicHost(new URL(url))).toBe(false);
  });
});

describe('publicOnlyDispatcher', () => {
  let server: Server;
  let port: number;
  beforeAll(async () => {
    server = createServer((_request, response) => response.end('internal'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('a name that resolves to a loopback address is refused at connection time; without the guard it connects', async () => {
    expect(await (await fetch(`http://localhost:${port}/`)).text()).toBe('internal');
    const refused = await fetch(`http://localhost:${port}/`, { dispatcher: publicOnlyDispatcher() }).catch((error: Error) => error);
    expect(refused).toBeInstanceOf(Error);
    expect(String((refused as Error & { cause?: unknown }).cause)).toMatch(/resolves to a non-public address/);
  });
});
