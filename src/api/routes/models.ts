import Router from '@koa/router';
import type { Deps } from '../../deps';
import { CATALOG_MAX_OUTPUT_TOKENS, findModel, listModels, NANO_PER_TOKEN_PER_USD_PER_MILLION, type ModelRecord } from '../../providers/catalog';
import { z } from 'zod';
import { ApiError } from '../errors';
import { parseInput } from '../validate';
import type { AppContext, AppState } from '../types';

/**
 * The public model catalog (no authentication). Payloads follow the OpenAI models list
 * (`{object: 'list', data: [{id, object: 'model', owned_by}]}`) and add the catalog
 * record: capabilities, parameters, max_output_tokens, context_window and pricing.
 */
const releasedAt = (model: ModelRecord) => `${model.released}T00:00:00Z`;

function presentModel(model: ModelRecord) {
  return {
    id: model.id,
    object: 'model' as const,
    created: Date.parse(releasedAt(model)) / 1000,
    owned_by: model.provider,
    provider: model.provider,
    name: model.name,
    capabilities: model.capabilities,
    // The sampling flags said explicitly for every model (the catalog states only exceptions).
    parameters: {
      ...model.parameters,
      top_p: model.parameters.top_p !== false,
      stop: model.parameters.stop !== false,
      temperature_or_top_p: model.parameters.temperature_or_top_p === true,
    },
    max_output_tokens: model.max_output_tokens,
    context_window: model.context_window,
    pricing: { unit: 'nano_credits_per_token', ...model.pricing },
  };
}

/** Per-model request parameter ranges, as a JSON Schema of the accepted chat request fields. */
function presentSchema(model: ModelRecord) {
  const temperature = model.parameters.temperature;
  const properties: Record<string, unknown> = {
    max_tokens: { type: 'integer', minimum: 1, maximum: model.max_output_tokens },
    response_format: { type: 'object', properties: { type: { type: 'string', enum: model.parameters.response_format_type } } },
  };
  if (model.parameters.top_p !== false) properties.top_p = { type: 'number', minimum: 0, maximum: 1 };
  if (model.parameters.stop !== false) properties.stop = { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' }, maxItems: 4 }] };
  if (temperature?.supported) properties.temperature = { type: 'number', minimum: temperature.min, maximum: temperature.max };
  if (model.parameters.reasoning_effort?.length) properties.reasoning_effort = { type: 'string', enum: model.parameters.reasoning_effort };
  if (model.capabilities.includes('tools') || model.capabilities.includes('web_search')) {
    const kinds = [...(model.capabilities.includes('tools') ? ['function'] : []), ...(model.capabilities.includes('web_search') ? ['web_search'] : [])];
    properties.tools = { type: 'array', maxItems: 128, items: { type: 'object', properties: { type: { type: 'string', enum: kinds } } } };
    if (model.capabilities.includes('tools')) properties.tool_choice = { oneOf: [{ type: 'string', enum: ['auto', 'none', 'required'] }, { type: 'object' }] };
  }
  if (model.provider !== 'anthropic') {
    properties.provider_options = {
      type: 'object',
      // (Only a model that reasons takes thinking_config, as only such a model takes reasoning_effort.)
      ...(model.provider === 'google' && model.capabilities.includes('reasoning')
        ? { properties: { thinking_config: { type: 'object', properties: { thinking_budget: { type: 'integer' }, include_thoughts: { type: 'boolean' } } } } }
        : {}),
    };
  }
  return {
    id: model.id,
    object: 'model.schema' as const,
    context_window: model.context_window,
    max_output_tokens: model.max_output_tokens,
    catalog_max_output_tokens: CATALOG_MAX_OUTPUT_TOKENS,
    capabilities: model.capabilities,
    // (A model that takes a temperature or top_p, not both, says so as JSON Schema does.)
    parameters: { type: 'object', properties, ...(model.parameters.temperature_or_top_p ? { not: { required: ['temperature', 'top_p'] } } : {}) },
  };
}

/**
 * Anthropic's own models API, for its SDK (`client.models.list()` / `retrieve()`, which send
 * `anthropic-version`): the Anthropic models /v1/messages serves, newest first, as bare names
 * with their dated snapshot, `{type: 'model', id, display_name, created_at}`, paged by
 * `after_id` / `before_id` / `limit` (1..1000, default 20) with `first_id`, `last_id`, `has_more`.
 */
/** Anthropic's SDK asks (it sends `anthropic-version`): the answer, errors included, is in its shapes. */
function speaksAnthropic(ctx: AppContext): boolean {
  if (ctx.get('anthropic-version') === '') return false;
  ctx.state.errorFormat = 'anthropic';
  return true;
}

const anthropicModels = (): ModelRecord[] =>
  listModels()
    .filter((model) => model.provider === 'anthropic')
    .sort((a, b) => b.released.localeCompare(a.released) || a.name.localeCompare(b.name));

/** `claude-sonnet-4-5` → `Claude Sonnet 4.5`, `claude-3-5-haiku-latest` → `Claude 3.5 Haiku`. */
function displayName(name: string): string {
  const words = name.replace(/-latest$/, '').split('-');
  const out: string[] = [];
  for (const word of words) {
    const previous = out.at(-1);
    if (/^\d+$/.test(word) && previous !== undefined && /^\d+(\.\d+)*$/.test(previous)) out[out.length - 1] = `${previous}.${word}`;
    else out.push(/^\d/.test(word) ? word : word[0]!.toUpperCase() + word.slice(1));
  }
  return out.join(' ');
}

/** The Anthropic model a bare name or one of its dated snapshots names (the snapshot's own record). */
const anthropicModel = (id: string): ModelRecord | undefined => findModel(`anthropic/${id}`);

const presentAnthropicModel = (model: ModelRecord) => ({ type: 'model' as const, id: model.name, display_name: displayName(model.snapshotOf ?? model.name), created_at: releasedAt(model) });

const AnthropicListQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(1000).default(20),
  after_id: z.string().min(1).optional(),
  before_id: z.string().min(1).optional(),
});

function listAnthropicModels(ctx: AppContext) {
  const query = parseInput(AnthropicListQuery, ctx.query, 'query');
  if (query.after_id !== undefined && query.before_id !== undefined) throw new ApiError(400, 'invalid_request_error', 'after_id and before_id are mutually exclusive');
  const models = anthropicModels();
  const position = (id: string) => {
    const model = anthropicModel(id);
    const index = model ? models.findIndex((candidate) => candidate.name === (model.snapshotOf ?? model.name)) : -1;
    if (index < 0) throw new ApiError(400, 'invalid_request_error', `'${id}' is not a model of this list`);
    return index;
  };
  let page: ModelRecord[];
  let hasMore: boolean;
  if (query.before_id !== undefined) {
    const end = position(query.before_id);
    const start = Math.max(0, end - query.limit);
    page = models.slice(start, end);
    hasMore = start > 0;
  } else {
    const start = query.after_id !== undefined ? position(query.after_id) + 1 : 0;
    page = models.slice(start, start + query.limit);
    hasMore = start + query.limit < models.length;
  }
  return { data: page.map(presentAnthropicModel), has_more: hasMore, first_id: page[0]?.name ?? null, last_id: page.at(-1)?.name ?? null };
}

const unknownModel = (id: string) => new ApiError(404, 'not_found_error', `model '${id}' not found`);

const PROVIDERS = [...new Set(listModels().map((model) => model.provider))];

/** `openai/gpt-4o`, or a bare name (or dated snapshot) that only one provider has. */
function resolve(id: string): ModelRecord {
  const candidates = id.includes('/') ? [findModel(id)] : PROVIDERS.map((provider) => findModel(`${provider}/${id}`));
  const found = candidates.filter((model): model is ModelRecord => model !== undefined);
  if (found.length !== 1) throw unknownModel(id);
  return found[0]!;
}

export function modelsRouter(_deps: Deps): Router<AppState, AppContext> {
  const router = new Router<AppState, AppContext>();
  router.get('/v1/models', (ctx) => {
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.vary('anthropic-version');
    if (speaksAnthropic(ctx)) {
      ctx.body = listAnthropicModels(ctx);
      return;
    }
    ctx.body = { object: 'list', credit_usd: 1 / 100, nano_per_token_per_usd_per_million: NANO_PER_TOKEN_PER_USD_PER_MILLION, data: listModels().map(presentModel) };
  });
  router.get('/v1/models/:owner/:model/schema', (ctx) => {
    ctx.body = presentSchema(resolve(`${ctx.params.owner}/${ctx.params.model}`));
  });
  router.get('/v1/models/:modelId/schema', (ctx) => {
    ctx.body = presentSchema(resolve(ctx.params.modelId!));
  });
  router.get('/v1/models/:owner/:model', (ctx) => {
    ctx.body = presentModel(resolve(`${ctx.params.owner}/${ctx.params.model}`));
  });
  router.get('/v1/models/:modelId', (ctx) => {
    ctx.vary('anthropic-version');
    if (speaksAnthropic(ctx)) {
      const model = anthropicModel(ctx.params.modelId!);
      if (!model) throw unknownModel(ctx.params.modelId!);
      ctx.body = { ...presentAnthropicModel(model), id: ctx.params.modelId };
      return;
    }
    ctx.body = presentModel(resolve(ctx.params.modelId!));
  });
  return router;
}
