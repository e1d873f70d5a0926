import type { AdminExtension } from './admin-extensions';
import { need } from './admin-flags';
import { hashPassword, INSTALL_ENVIRONMENTS, UuidSchema } from '../domain/platform';
import { withTransaction } from '../store/db';
import { revokeOAuthClient } from '../store/oauth';
import { connectSiteUser, disconnectSiteUser, findSiteById, setAsyncExecution, setSiteStatus } from '../store/sites';
import { grantPlatformAccount, insertPlatformAccount, insertPlatformInstall, insertPlatformSite, insertPlatformUser } from '../store/platform';

/** Admin commands for registered sites and the platform API (console actions the spec does not show). */
/** Platform ids are UUIDs: a malformed one is named here rather than by a database error. */
const needUuid = (flags: Record<string, string | undefined>, name: string): string => {
  const parsed = UuidSchema.safeParse(need(flags, name));
  if (!parsed.success) throw new Error(`--${name} must be a UUID`);
  return parsed.data;
};

const siteStatus = (status: 'active' | 'revoked' | 'suspended'): AdminExtension => ({
  command: `site ${status === 'active' ? 'activate' : status === 'revoked' ? 'revoke' : 'suspend'}`,
  usage: `site ${status === 'active' ? 'activate' : status === 'revoked' ? 'revoke' : 'suspend'} --id SITE_ID`,
  async run(db, flags) {
    const id = need(flags, 'id');
    const outcome = await setSiteStatus(db, id, status);
    if (outcome === 'not_found') throw new Error(`no site with id ${id}`);
    if (outcome === 'final') throw new Error(`site ${id} is revoked, which is final (suspend a site to turn it off for a while)`);
    return { site_id: id, status };
  },
});

export const SITE_AND_PLATFORM_COMMANDS: AdminExtension[] = [
  {
    command: 'oauth revoke-client',
    usage: 'oauth revoke-client --client-id C   (the client gets no more tokens and the ones it holds stop working)',
    async run(db, flags) {
      const clientId = need(flags, 'client-id');
      const revoked = await withTransaction(db, (client) => revokeOAuthClient(client, clientId));
      if (revoked === undefined) throw new Error(`no OAuth client with id ${clientId}`);
      return { client_id: clientId, revoked: true, revoked_tokens: revoked };
    },
  },
  siteStatus('active'),
  siteStatus('revoked'),
  siteStatus('suspended'),
  {
    command: 'site async-execution',
    usage: 'site async-execution --id SITE_ID --enabled true|false   (off: events are stored, no agent runs; on again: waiting messages run)',
    async run(db, flags) {
      const id = need(flags, 'id');
      const enabled = need(flags, 'enabled');
      if (enabled !== 'true' && enabled !== 'false') throw new Error('--enabled must be true or false');
      if (!(await setAsyncExecution(db, id, enabled === 'true'))) throw new Error(`no site with id ${id}`);
      return { site_id: id, async_execution_enabled: enabled === 'true' };
    },
  },
  {
    command: 'site connect-user',
    usage: 'site connect-user --id SITE_ID --subject IDP_SUBJECT [--name CMS_USER]   (records a CMS account connection)',
    async run(db, flags) {
      await connectSiteUser(db, need(flags, 'id'), need(flags, 'subject'), flags.name ?? null);
      return { site_id: flags.id, subject: flags.subject, cms_connection_status: 'connected' };
    },
  },
  {
    command: 'site disconnect-user',
    usage: 'site disconnect-user --id SITE_ID --subject IDP_SUBJECT',
    async run(db, flags) {
      const siteId = need(flags, 'id');
      if (!(await findSiteById(db, siteId))) throw new Error(`no site with id ${siteId}`);
      const removed = await disconnectSiteUser(db, siteId, need(flags, 'subject'));
      return { site_id: siteId, subject: flags.subject, removed };
    },
  },
  {
    command: 'platform-user create',
    usage: 'platform-user create --username U --password P   (platform API Basic credentials, scrypt-hashed)',
    async run(db, flags) {
      const password = need(flags, 'password');
      if (password.length < 12) throw new Error('--password must be at least 12 characters');
      return insertPlatformUser(db, need(flags, 'username'), await hashPassword(password));
    },
  },
  {
    command: 'platform-user grant',
    usage: 'platform-user grant --username U --account PLATFORM_ACCOUNT_UUID',
    async run(db, flags) {
      const username = need(flags, 'username');
      const accountId = needUuid(flags, 'account');
      const result = await grantPlatformAccount(db, username, accountId);
      if ('missing' in result) throw new Error(result.missing === 'user' ? `no platform user named ${username}` : `no platform account with id ${accountId}`);
      return { username, account_id: accountId, already_granted: !result.granted };
    },
  },
  {
    command: 'platform-account create',
    usage: 'platform-account create --name N',
    run: (db, flags) => insertPlatformAccount(db, need(flags, 'name')),
  },
  {
    command: 'platform-site create',
    usage: 'platform-site create --account PLATFORM_ACCOUNT_UUID --name N',
    run: (db, flags) => insertPlatformSite(db, { accountId: needUuid(flags, 'account'), name: need(flags, 'name') }),
  },
  {
    command: 'platform-install create',
    usage: `platform-install create --id PLATFORM_SITE_UUID --name N [--type ${INSTALL_ENVIRONMENTS.join('|')}]`,
    async run(db, flags) {
      const environment = flags.type ?? null;
      if (environment && !(INSTALL_ENVIRONMENTS as readonly string[]).includes(environment)) throw new Error(`--type must be one of ${INSTALL_ENVIRONMENTS.join(', ')}`);
      const name = need(flags, 'name');
      return insertPlatformInstall(db, { siteId: needUuid(flags, 'id'), name, environment, cname: `${name}.platform.local` });
    },
  },
];
