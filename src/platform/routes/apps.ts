import Router from '@koa/router';
import { createHash, randomBytes } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import type { Pool } from 'pg';
import {
  AppCreateSchema, DomainReplaceSchema, DomainSchema, EnvironmentCreateSchema, EnvironmentPatchSchema,
  PLATFORM_JSON_LIMIT_BYTES, PLATFORM_UPLOAD_LIMIT_BYTES, UPLOAD_MEDIA_TYPES, UuidSchema,
} from '../../domain/platform';
import { withTransaction } from '../../store/db';
import { refuseBody } from '../../read-body';
import * as store from '../../store/platform-apps';
import { PlatformError, invalidValue, platformConflict, platformNotFound } from '../errors';
import { parsePathParam, parsePlatform, readJson, readRaw, requireAccount } from '../middleware';
import type { PlatformContext, PlatformState } from '../types';
import { isZipArchive } from '../zip';

/**
 * Headless application operations (docs/platform-api.md). Custom methods use the
 * `{resource}:{verb}` form of the spec's paths; the router captures `id:verb` as one
 * parameter and `split` separates them.
 */
const APPS = '/v1/accounts/:account/apps';
const ENV = `${APPS}/:app/environments/:environment`;

/** A resource deleted by a concurrent request between the lookup and the write. */
const notFound = (resource: string): never => {
  throw platformNotFound(resource);
};

/**
 * `id:verb` → [id, verb]. A missing or unknown verb is an unknown route: 404. (A documented
 * path with another method never gets here: the app answers it 405 with `Allow` first.)
 */
function split(value: string, verbs: string[]): [string, string] {
  const at = value.lastIndexOf(':');
  const verb = at < 0 ? '' : value.slice(at + 1);
  if (!verbs.includes(verb)) throw new PlatformError(404, 'Not Found', [{ resource: 'route', type: 'value_unavailable', message: at < 0 ? 'no method given' : `unknown method ':${verb}'` }]);
  return [value.slice(0, at), verb];
}

/**
 * Bytes of uploads a process holds at once: an upload holds its archive (≤ 100 MiB) in memory
 * until it is stored. What counts is what has arrived (a client dripping its body holds almost
 * nothing, and so blocks nobody); an upload whose declared size does not fit what is left is
 * 503 with Retry-After before its body is read, and one that would pass the budget as it
 * arrives is 503 there. A body of which any 15 seconds bring less than UPLOAD_MIN_RATE is refused with 408.
 */
export const PLATFORM_UPLOAD_MEMORY_BYTES = 2 * PLATFORM_UPLOAD_LIMIT_BYTES;
const UPLOAD_MIN_RATE = { bytesPerSecond: 32 * 1024, windowMs: 15_000 };

export function platformAppsRouter(db: Pool): Router<PlatformState, PlatformContext> {
  const router = new Router<PlatformState, PlatformContext>();

  async function app(ctx: PlatformContext) {
    const account = requireAccount(ctx, ctx.params.account!, UuidSchema);
    const found = await store.findApp(db, account, parsePathParam(UuidSchema, ctx.params.app, 'app', 'app'));
    if (!found) throw platformNotFound('app');
    return found;
  }
  async function environment(ctx: PlatformContext, envId = ctx.params.environment!) {
    const parent = await app(ctx);
    const found = await store.findEnvironment(db, parent.id, parsePathParam(UuidSchema, envId, 'environment', 'environment'));
    if (!found) throw platformNotFound('environment');
    return found;
  }

  router.get(APPS, async (ctx) => {
    const account = requireAccount(ctx, ctx.params.account!, UuidSchema);
    ctx.body = { results: await store.listApps(db, account) };
  });
  router.post(APPS, async (ctx) => {
    const account = requireAccount(ctx, ctx.params.account!, UuidSchema);
    const input = parsePlatform(AppCreateSchema, await readJson(ctx, PLATFORM_JSON_LIMIT_BYTES), 'app');
    try {
      ctx.body = await store.insertApp(db, account, input.name, input.repository ?? null);
    } catch (error) {
      if ((error as { code?: string }).code === '23505') throw platformConflict('app', 'name', 'an app with this name exists in the account');
      throw error;
    }
    ctx.status = 201;
  });
  router.get(`${APPS}/:app`, async (ctx) => {
    ctx.body = await app(ctx);
  });
  router.delete(`${APPS}/:app`, async (ctx) => {
    const found = await app(ctx);
    await store.deleteApp(db, found.account.id, found.id);
    ctx.status = 204;
  });

  router.get(`${APPS}/:app/environments`, async (ctx) => {
    ctx.body = { results: await store.listEnvironments(db, (await app(ctx)).id) };
  });
  router.post(`${APPS}/:app/environments`, async (ctx) => {
    const parent = await app(ctx);
    const input = parsePlatform(EnvironmentCreateSchema, await readJson(ctx, PLATFORM_JSON_LIMIT_BYTES), 'environment');
    try {
      ctx.body = await store.insertEnvironment(db, parent.id, input);
    } catch (error) {
      if ((error as { code?: string }).code === '23505') throw platformConflict('environment', 'name', 'an environment with this name exists in the app');
      throw error;
    }
    ctx.status = 201;
  });
  router.get(ENV, async (ctx) => {
    ctx.body = await environment(ctx);
  });
  router.patch(ENV, async (ctx) => {
    const env = await environment(ctx);
    const patch = parsePlatform(EnvironmentPatchSchema, await readJson(ctx, PLATFORM_JSON_LIMIT_BYTES), 'environment');
    ctx.body = (await store.patchEnvironment(db, env.id, patch)) ?? notFound('environment');
  });
  router.delete(ENV, async (ctx) => {
    await store.deleteEnvironment(db, (await environment(ctx)).id);
    ctx.status = 204;
  });
  // POST .../environments/{environment}:clearCache
  router.post(ENV, async (ctx) => {
    const [envId] = split(ctx.params.environment!, ['clearCache']);
    const env = await environment(ctx, envId);
    ctx.status = 202;
    ctx.body = (await store.clearEnvironmentCache(db, env.id)) ?? notFound('environment');
  });

  // POST /fu/v1/accounts/{account}/apps/{app}/environments/{environment}:upload (a zip archive)
  let held = 0; // bytes the uploads in progress have received
  const busy = () => new PlatformError(503, 'Service Unavailable', [{ resource: 'upload', message: 'too many uploads in progress; retry shortly' }], { 'Retry-After': '5' });
  router.post(`/fu${ENV}`, async (ctx) => {
    const [envId] = split(ctx.params.environment!, ['upload']);
    const env = await environment(ctx, envId);
    // (Refused bodies are drained, within bounds, so an uploading client reads the answer: refuseBody.)
    if (!ctx.is(UPLOAD_MEDIA_TYPES)) {
      throw refuseBody(ctx, () => new PlatformError(415, 'Unsupported Media Type', [{ resource: 'upload', field: 'Content-Type', type: 'invalid_value', message: `must be one of ${UPLOAD_MEDIA_TYPES.join(', ')}` }]));
    }
    const declared = Number(ctx.get('content-length')) || 0;
    if (held + Math.min(declared, PLATFORM_UPLOAD_LIMIT_BYTES) > PLATFORM_UPLOAD_MEMORY_BYTES) throw refuseBody(ctx, busy);
    let mine = 0;
    try {
      const archive = await readRaw(ctx, PLATFORM_UPLOAD_LIMIT_BYTES, {
        onProgress: (bytes) => {
          held += bytes - mine;
          mine = bytes;
          return held > PLATFORM_UPLOAD_MEMORY_BYTES ? busy() : undefined;
        },
        minRate: {
          ...UPLOAD_MIN_RATE,
          tooSlow: () => new PlatformError(408, 'Request Timeout', [{ resource: 'upload', type: 'invalid_value', message: `the upload arrived slower than ${UPLOAD_MIN_RATE.bytesPerSecond} bytes a second` }]),
        },
      });
      if (!isZipArchive(archive)) throw invalidValue('upload', 'body', 'must be a zip archive');
      const sha256 = createHash('sha256').update(archive).digest('hex');
      ctx.body = await withTransaction(db, (client) => store.insertUploadAndBuild(client, env.id, archive, sha256));
      ctx.status = 201;
    } finally {
      held -= mine;
    }
  });

  router.get(`${ENV}/builds`, async (ctx) => {
    ctx.body = { results: await store.listBuilds(db, (await environment(ctx)).id) };
  });
  router.get(`${ENV}/builds/:build`, async (ctx) => {
    const env = await environment(ctx);
    const build = await store.findBuild(db, env.id, parsePathParam(UuidSchema, ctx.params.build, 'build', 'build'));
    if (!build) throw platformNotFound('build');
    ctx.body = build;
  });
  router.post(`${ENV}/builds/:build`, async (ctx) => {
    const [buildId] = split(ctx.params.build!, ['cancel']);
    const env = await environment(ctx);
    const build = await store.findBuild(db, env.id, parsePathParam(UuidSchema, buildId, 'build', 'build'));
    if (!build) throw platformNotFound('build');
    const cancelled = await store.cancelBuild(db, build.id);
    if (!cancelled) throw platformConflict('build', 'status', `the build already finished (${build.status})`);
    ctx.body = cancelled;
  });

  router.get(`${ENV}/domainMappings`, async (ctx) => {
    ctx.body = { results: await store.listDomainMappings(db, (await environment(ctx)).id) };
  });
  // POST .../environments/{environment}/domainMappings:replace
  router.post(`${ENV}/:collection`, async (ctx) => {
    if (ctx.params.collection !== 'domainMappings:replace') throw new PlatformError(404, 'Not Found');
    const env = await environment(ctx);
    const { domains } = parsePlatform(DomainReplaceSchema, await readJson(ctx, PLATFORM_JSON_LIMIT_BYTES), 'domain_mapping');
    const replaced = await withTransaction(db, (client) => store.replaceDomainMappings(client, env.id, domains, () => randomBytes(16).toString('hex')));
    if (!replaced) throw new PlatformError(404, 'Not Found', [{ resource: 'environment', type: 'value_unavailable', message: 'the environment was deleted' }]);
    ctx.body = { results: await store.listDomainMappings(db, env.id) };
  });
  // POST .../domainMappings/{domain}:markPrimary | :revalidate | :verifyTxtRecord
  router.post(`${ENV}/domainMappings/:domain`, async (ctx) => {
    const [domainName, verb] = split(ctx.params.domain!, ['markPrimary', 'revalidate', 'verifyTxtRecord']);
    const env = await environment(ctx);
    const domain = parsePathParam(DomainSchema, domainName, 'domain_mapping', 'domain');
    const mapping = await store.findDomainMapping(db, env.id, domain);
    if (!mapping) throw platformNotFound('domain_mapping');
    if (verb === 'markPrimary') {
      // Thrown inside the transaction, so a domain removed meanwhile undoes the whole change.
      ctx.body = await withTransaction(db, async (client) => (await store.markPrimaryDomain(client, env.id, domain)) ?? notFound('domain_mapping'));
      return;
    }
    // revalidate and verifyTxtRecord both look the TXT record up now (real DNS).
    const verified = await hasTxtRecord(mapping.txt_record.name, mapping.txt_record.value);
    ctx.body = (await store.setDomainVerification(db, env.id, domain, verified ? 'verified' : 'failed')) ?? notFound('domain_mapping');
  });

  return router;
}

async function hasTxtRecord(name: string, value: string): Promise<boolean> {
  const resolver = new Resolver({ timeout: 3000, tries: 1 });
  try {
    const records = await resolver.resolveTxt(name);
    return records.some((chunks) => chunks.join('') === value);
  } catch {
    return false; // NXDOMAIN, no TXT, timeout: not verified
  }
}
