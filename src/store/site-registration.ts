import type { Pool } from 'pg';
import { compactSiteInfo, displayNameFor, siteUrlKey, type RegisteredSite, type SiteRegistration } from '../domain/sites';
import { decryptSiteSecret, encryptSiteSecret, generateSiteHmacSecret } from '../domain/site-secret';
import { withTransaction } from './db';
import { randomBase62 } from './ids';
import { attachClientToSite, bindSiteClient, findSiteByClientId, findSiteByUrlKey, insertSite, lockAccountRegistrations, updateSite, type SiteRow, type SiteWrite } from './sites';

export interface RegistrationResult {
  site: RegisteredSite;
  created: boolean;
}

/** The registration cannot be made (the route answers 409 with this message). */
export class SiteRegistrationConflict extends Error {}

/** The site is revoked or suspended: no client may register it (the route answers 403 with this message). */
export class SiteRegistrationRefused extends Error {}

/**
 * Registers or updates the site of the calling client (`clientId`, in `accountId`):
 * 1. the client already has a site → update it in place (409 if another account first
 *    registered the client, or if the new site_url belongs to another site of the account);
 * 2. else a site of the account already has this site_url → the site reconnected with a
 *    new client: it moves to the new client_id, keeping its site_id and secret;
 * 3. else → a new site with a fresh site_id and secret.
 * A client whose site has since reconnected under a newer client registers nothing (409).
 * A revoked or suspended site is refused in 1 and 2 (403): a new client of the account must
 * not get the secret of a site an operator turned off, nor move it to itself.
 * Omitted `project_id` and `site_info` keep the stored values; `display_name` defaults to
 * the site_url.
 */
export async function registerSite(
  pool: Pool,
  gatewaySecret: string,
  caller: { accountId: string; clientId: string },
  input: SiteRegistration,
): Promise<RegistrationResult> {
  const urlKey = siteUrlKey(input.site_url);
  return withTransaction(pool, async (client) => {
    await lockAccountRegistrations(client, caller.accountId);
    // The client's first account owns it for good, even after its site moved to a new client.
    const binding = await bindSiteClient(client, caller.clientId, caller.accountId);
    if (binding.accountId !== caller.accountId) throw new SiteRegistrationConflict('this client was registered by another account');
    const existing = await findSiteByClientId(client, caller.clientId);
    // A client whose site reconnected under a newer client is that site's past: it registers
    // nothing more (it would move itself off the site, out of reach of the site's status).
    if (binding.siteId && binding.siteId !== existing?.site_id) {
      throw new SiteRegistrationConflict("this client's site has reconnected under a newer client; register with that one");
    }
    const urlOwner = await findSiteByUrlKey(client, caller.accountId, urlKey);
    if (existing && urlOwner && urlOwner.site_id !== existing.site_id) {
      throw new SiteRegistrationConflict('site_url is already registered by another site of this account');
    }
    const target = existing ?? urlOwner;
    if (target && target.status !== 'active') {
      throw new SiteRegistrationRefused(target.status === 'revoked' ? 'this site was revoked by an operator and cannot be registered again' : 'this site is suspended by an operator');
    }
    const write = (current?: SiteRow): SiteWrite => ({
      clientId: caller.clientId,
      projectId: input.project_id === undefined ? (current?.project_id ?? null) : input.project_id,
      siteUrl: input.site_url,
      siteUrlKey: urlKey,
      displayName: displayNameFor(input),
      siteInfo: input.site_info === undefined ? (current?.site_info ?? null) : compactSiteInfo(input.site_info),
    });
    if (target) {
      const row = await updateSite(client, target.site_id, write(target));
      await attachClientToSite(client, caller.clientId, row.site_id);
      return { site: present(row, decryptSiteSecret(gatewaySecret, row.site_id, row.hmac_secret_encrypted)), created: false };
    }
    const siteId = `site_${randomBase62(22)}`;
    const secret = generateSiteHmacSecret();
    const row = await insertSite(client, {
      ...write(),
      siteId,
      accountId: caller.accountId,
      hmacSecretEncrypted: encryptSiteSecret(gatewaySecret, siteId, secret),
    });
    await attachClientToSite(client, caller.clientId, siteId);
    return { site: present(row, secret), created: true };
  });
}

function present(row: SiteRow, secret: string): RegisteredSite {
  return {
    site_id: row.site_id,
    client_id: row.client_id,
    status: row.status,
    created_at: row.created_at.toISOString(),
    site_hmac_secret: secret,
  };
}
