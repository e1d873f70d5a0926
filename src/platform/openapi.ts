/**
 * OpenAPI 3.1 description of the platform API, served at GET /v1/openapi.json.
 * Kept next to the routes; the platform tests check every documented path is routed.
 */
import { z } from 'zod';
import { AppCreateSchema, DomainReplaceSchema, DomainSchema, EnvironmentCreateSchema, EnvironmentPatchSchema, UPLOAD_MEDIA_TYPES } from '../domain/platform';

/** A request schema as JSON Schema, from the zod schema the route parses with (one source of the rules). */
const fromZod = (schema: z.ZodType): Record<string, unknown> => {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: 'input' });
  return rest;
};
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: object, description = 'OK') => ({ description, content: { 'application/json': { schema } } });
const list = (item: string) => json({ type: 'object', required: ['results'], properties: { results: { type: 'array', items: ref(item) } } });
const error = (description: string, response = 'Error') => ({ $ref: `#/components/responses/${response}`, description });
/** What any operation can answer: HTTP Basic, the rate limit and the database apply to all of them. */
const errors = {
  '400': error('Bad request: an invalid value (an invalid UUID included)'),
  '401': error('Authentication error', 'Unauthorized'),
  '403': error('Not authorized for the account'),
  '404': error('Not found (a resource of another account included)'),
  '429': error('Too many requests (per user name and per client address)', 'RetryLater'),
  '503': error('Service unavailable (the database; for uploads, too many in progress)', 'RetryLater'),
  '500': error('Internal error: unexpected; safe to retry once'),
};
/** What any operation with a request body can answer, from reading it. */
const bodyErrors = {
  '413': error('Payload too large'),
  '415': error('Unsupported media type: a compressed body (Content-Encoding), or an upload of another Content-Type'),
};
const conflict = (description: string) => ({ '409': error(`Conflict: ${description}`) });
const uuidParam = (name: string) => ({ name, in: 'path', required: true, schema: { type: 'string', format: 'uuid' } });
const body = (schema: object) => ({ required: true, content: { 'application/json': { schema } } });
const op = (summary: string, responses: object, extra: { requestBody?: object; parameters?: object[] } = {}) => ({
  summary,
  responses: { ...responses, ...errors, ...(extra.requestBody ? bodyErrors : {}) },
  ...extra,
});

const APPS = '/v1/accounts/{account}/apps';
const ENV = `${APPS}/{app}/environments/{environment}`;
const appParams = [uuidParam('account'), uuidParam('app')];
const envParams = [...appParams, uuidParam('environment')];
const domainParam = { name: 'domain', in: 'path', required: true, schema: fromZod(DomainSchema) };

export const PLATFORM_OPENAPI = {
  openapi: '3.1.0',
  info: {
    title: 'Platform API',
    version: '1.0',
    description: 'Sites, installs and headless applications. HTTP Basic authentication. A path below called with a method it does not list answers 405 with an `Allow` header.',
  },
  security: [{ basic: [] }],
  paths: {
    '/v1/sites': {
      get: op('List sites', { '200': json(ref('SitePage')) }, {
        parameters: [
          { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100, default: 100 } },
          { name: 'offset', in: 'query', schema: { type: 'integer', minimum: 0, default: 0 } },
          { name: 'account_id', in: 'query', schema: { type: 'string', format: 'uuid' } },
        ],
      }),
    },
    '/v1/sites/{site_id}': { get: op('Get a site', { '200': json(ref('Site')) }, { parameters: [uuidParam('site_id')] }) },
    [APPS]: {
      get: op('List apps', { '200': list('App') }, { parameters: [uuidParam('account')] }),
      post: op('Create an app', { '201': json(ref('App'), 'Created'), ...conflict('an app with this name exists in the account') }, { parameters: [uuidParam('account')], requestBody: body(ref('AppCreate')) }),
    },
    [`${APPS}/{app}`]: {
      get: op('Get an app', { '200': json(ref('App')) }, { parameters: appParams }),
      delete: op('Delete an app and its environments', { '204': { description: 'Deleted' } }, { parameters: appParams }),
    },
    [`/fu${ENV}:upload`]: {
      post: op('Upload a zip archive and queue a build of it', { '201': json(ref('UploadResult'), 'Created'), '408': error('Request timeout: the archive arrived slower than 32 KiB a second') }, {
        parameters: envParams,
        requestBody: { required: true, content: Object.fromEntries(UPLOAD_MEDIA_TYPES.map((type) => [type, { schema: { type: 'string', format: 'binary' } }])) },
      }),
    },
    [`${APPS}/{app}/environments`]: {
      get: op('List environments', { '200': list('Environment') }, { parameters: appParams }),
      post: op('Create an environment', { '201': json(ref('Environment'), 'Created'), ...conflict('an environment with this name exists in the app') }, { parameters: appParams, requestBody: body(ref('EnvironmentCreate')) }),
    },
    [ENV]: {
      get: op('Get an environment', { '200': json(ref('Environment')) }, { parameters: envParams }),
      patch: op('Update an environment (omitted fields kept; variables replaced)', { '200': json(ref('Environment')) }, { parameters: envParams, requestBody: body(ref('EnvironmentPatch')) }),
      delete: op('Delete an environment', { '204': { description: 'Deleted' } }, { parameters: envParams }),
    },
    [`${ENV}:clearCache`]: { post: op('Clear the environment cache', { '202': json(ref('Environment'), 'Accepted') }, { parameters: envParams }) },
    [`${ENV}/builds`]: { get: op('List builds, newest first (100 at most)', { '200': list('Build') }, { parameters: envParams }) },
    [`${ENV}/builds/{build}`]: { get: op('Get a build', { '200': json(ref('Build')) }, { parameters: [...envParams, uuidParam('build')] }) },
    [`${ENV}/builds/{build}:cancel`]: { post: op('Cancel a queued or running build', { '200': json(ref('Build')), ...conflict('the build already finished') }, { parameters: [...envParams, uuidParam('build')] }) },
    [`${ENV}/domainMappings`]: { get: op('List domain mappings', { '200': list('DomainMapping') }, { parameters: envParams }) },
    [`${ENV}/domainMappings:replace`]: {
      post: op('Replace the set of domains', { '200': list('DomainMapping') }, { parameters: envParams, requestBody: body(fromZod(DomainReplaceSchema)) }),
    },
    [`${ENV}/domainMappings/{domain}:markPrimary`]: { post: op('Make the domain the primary one', { '200': json(ref('DomainMapping')) }, { parameters: [...envParams, domainParam] }) },
    [`${ENV}/domainMappings/{domain}:revalidate`]: { post: op('Check the domain again now', { '200': json(ref('DomainMapping')) }, { parameters: [...envParams, domainParam] }) },
    [`${ENV}/domainMappings/{domain}:verifyTxtRecord`]: { post: op('Look up the verification TXT record now', { '200': json(ref('DomainMapping')) }, { parameters: [...envParams, domainParam] }) },
  },
  components: {
    securitySchemes: { basic: { type: 'http', scheme: 'basic' } },
    responses: {
      Error: json(ref('Error'), 'Error'),
      Unauthorized: { ...json(ref('Error'), 'Authentication error'), headers: { 'WWW-Authenticate': { schema: { type: 'string' }, description: 'Basic realm="platform"' } } },
      RetryLater: { ...json(ref('Error'), 'Retry later'), headers: { 'Retry-After': { schema: { type: 'integer' }, description: 'seconds' } } },
    },
    schemas: {
      Error: {
        type: 'object',
        required: ['message'],
        properties: {
          message: { type: 'string' },
          documentation_url: { type: 'string' },
          errors: {
            type: 'array',
            items: {
              type: 'object',
              required: ['resource'],
              properties: {
                resource: { type: 'string' },
                field: { type: 'string' },
                type: { type: 'string', enum: ['invalid_value', 'access_error', 'value_unavailable', 'missing_value'] },
                code: { type: 'string' },
                message: { type: 'string' },
              },
            },
          },
        },
      },
      SitePage: {
        type: 'object',
        required: ['previous', 'next', 'count', 'results'],
        properties: { previous: { type: ['string', 'null'] }, next: { type: ['string', 'null'] }, count: { type: 'integer' }, results: { type: 'array', items: ref('Site') } },
      },
      Site: {
        type: 'object',
        required: ['id', 'name', 'account', 'group_name', 'tags', 'created_at', 'sandbox', 'transferable', 'installs'],
        properties: {
          id: { type: 'string', format: 'uuid' },
          name: { type: 'string' },
          account: { type: 'object', required: ['id'], properties: { id: { type: 'string', format: 'uuid' } } },
          group_name: { type: ['string', 'null'] },
          tags: { type: 'array', items: { type: 'string' } },
          created_at: { type: 'string', format: 'date-time' },
          sandbox: { type: 'boolean' },
          transferable: { type: 'boolean' },
          installs: { type: 'array', items: ref('Install') },
        },
      },
      Install: {
        type: 'object',
        required: ['id', 'name', 'environment', 'cname', 'php_version', 'is_multisite'],
        properties: {
          id: { type: 'string', format: 'uuid' },
          name: { type: 'string' },
          environment: { type: ['string', 'null'], enum: ['production', 'staging', 'development', null] },
          cname: { type: 'string' },
          php_version: { type: ['string', 'null'] },
          is_multisite: { type: ['boolean', 'null'] },
        },
      },
      AppCreate: fromZod(AppCreateSchema),
      App: {
        type: 'object',
        required: ['id', 'account', 'name', 'repository', 'created_at', 'updated_at'],
        properties: {
          id: { type: 'string', format: 'uuid' },
          account: { type: 'object', properties: { id: { type: 'string', format: 'uuid' } } },
          name: { type: 'string' },
          repository: { type: ['string', 'null'] },
          created_at: { type: 'string', format: 'date-time' },
          updated_at: { type: 'string', format: 'date-time' },
        },
      },
      EnvironmentCreate: fromZod(EnvironmentCreateSchema),
      EnvironmentPatch: fromZod(EnvironmentPatchSchema),
      Environment: {
        type: 'object',
        required: ['id', 'app', 'name', 'branch', 'variables', 'cache_cleared_at', 'created_at', 'updated_at'],
        properties: {
          id: { type: 'string', format: 'uuid' },
          app: { type: 'object', properties: { id: { type: 'string', format: 'uuid' } } },
          name: { type: 'string' },
          branch: { type: ['string', 'null'] },
          variables: { type: 'object', additionalProperties: { type: 'string' } },
          cache_cleared_at: { type: ['string', 'null'], format: 'date-time' },
          created_at: { type: 'string', format: 'date-time' },
          updated_at: { type: 'string', format: 'date-time' },
        },
      },
      Build: {
        type: 'object',
        required: ['id', 'environment', 'upload_id', 'status', 'created_at', 'finished_at'],
        properties: {
          id: { type: 'string', format: 'uuid' },
          environment: { type: 'object', properties: { id: { type: 'string', format: 'uuid' } } },
          upload_id: { type: ['string', 'null'], format: 'uuid' },
          status: { type: 'string', enum: ['queued', 'running', 'succeeded', 'failed', 'cancelled'] },
          created_at: { type: 'string', format: 'date-time' },
          finished_at: { type: ['string', 'null'], format: 'date-time' },
        },
      },
      UploadResult: {
        type: 'object',
        required: ['upload', 'build'],
        properties: {
          upload: { type: 'object', properties: { id: { type: 'string', format: 'uuid' }, size_bytes: { type: 'integer' }, sha256: { type: 'string' } } },
          build: ref('Build'),
        },
      },
      DomainMapping: {
        type: 'object',
        required: ['domain', 'is_primary', 'verification_status', 'txt_record', 'checked_at', 'created_at'],
        properties: {
          domain: { type: 'string' },
          is_primary: { type: 'boolean' },
          verification_status: { type: 'string', enum: ['pending', 'verified', 'failed'] },
          txt_record: { type: 'object', properties: { name: { type: 'string' }, value: { type: 'string' } } },
          checked_at: { type: ['string', 'null'], format: 'date-time' },
          created_at: { type: 'string', format: 'date-time' },
        },
      },
    },
  },
} as const;
