import { execFileSync, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { Connection } from '@temporalio/client';

/** A port nothing listens on now (the OS picks it). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * A Temporal dev server of the test's own (in memory, the shared one's search attributes),
 * for a test that needs a server setting the shared one must not have, such as a low
 * `limit.historyCount.suggestContinueAsNew`. The CLI is the one scripts/services.sh built.
 */
export async function startOwnTemporal(dynamicConfig: Record<string, string | number>): Promise<{ address: string; stop(): Promise<void> }> {
  const cli = execFileSync('bash', ['scripts/services.sh', 'temporal-cli'], { cwd: `${__dirname}/../..`, encoding: 'utf8' }).trim();
  const [port, httpPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--http-port', String(httpPort), '--metrics-port', String(metricsPort), '--headless', '--log-level', 'error'];
  for (const attribute of ['ProjectId', 'AgentId', 'SessionStatus']) args.push('--search-attribute', `${attribute}=Keyword`);
  for (const [name, value] of Object.entries(dynamicConfig)) args.push('--dynamic-config-value', `${name}=${value}`);
  const child = spawn(cli, args, { stdio: 'ignore' });
  const address = `127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      await connection.workflowService.getSystemInfo({});
      await connection.close();
      break;
    } catch (error) {
      if (Date.now() > deadline || child.exitCode !== null) {
        child.kill('SIGKILL');
        throw new Error(`the test's own Temporal dev server did not start: ${(error as Error).message}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  return {
    address,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
