import type { AddressInfo } from 'node:net';
import type { Pool } from 'pg';
import { createPlatformServer } from '../../src/platform/app';
import { createLogger } from '../../src/logger';
import { hashPassword } from '../../src/domain/platform';
import { grantPlatformAccount, insertPlatformAccount, insertPlatformUser } from '../../src/store/platform';
import { uniqueId } from './config';

/** The platform API in-process on an ephemeral port, over the given pool. */
export async function startPlatform(db: Pool): Promise<{ url: string; close(): Promise<void> }> {
  const server = createPlatformServer({ db, logger: createLogger({ level: 'silent' }) });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A platform user granted a new account: its Basic-auth JSON headers and the account id. */
export async function platformUserWithAccount(db: Pool, prefix: string): Promise<{ headers: Record<string, string>; accountId: string; username: string }> {
  const username = uniqueId(prefix);
  await insertPlatformUser(db, username, await hashPassword('pw'));
  const accountId = (await insertPlatformAccount(db, prefix)).id;
  await grantPlatformAccount(db, username, accountId);
  return { headers: { authorization: `Basic ${Buffer.from(`${username}:pw`).toString('base64')}`, 'content-type': 'application/json' }, accountId, username };
}
