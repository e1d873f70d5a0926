import Router from '@koa/router';
import type { Deps } from '../../deps';
import { CATALOG_MAX_OUTPUT_TOKENS, findModel, listModels, NANO_PER_TOKEN_PER_USD_PER_MILLION, type ModelRecord } from '../../providers/catalog';
import { ApiError } from '../errors';
import type { AppContext, AppState } from '../types';

/**
 * The public model catalog (no authentication). Payloads follow the OpenAI models list
 * (`{object: 'list', data: [{id, object: 'model', owned_by}]}`) and add the catalog
 * record: capabilities, parameters, max_output_tokens, context_window and pricing.
 */
function presentModel(model: ModelRecord) {
  return {
    id: model.id,
    object: 'model' as const,
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

const unknownModel = (id: string) => new ApiError(404, 'not_found_error', `model '${id}' not found`);

/** `openai/gpt-4o` or a bare name that only one provider has. */
function resolve(id: string): ModelRecord {
  const model = findModel(id) ?? (id.includes('/') ? undefined : onlyMatch(listModels().filter((m) => m.name === id)));
  if (!model) throw unknownModel(id);
  return model;
}
const onlyMatch = (models: ModelRecord[]) => (models.length === 1 ? models[0] : undefined);

export function modelsRouter(_deps: Deps): Router<AppState, AppContext> {
  const router = new Router<AppState, AppContext>();
  router.get('/v1/models', (ctx) => {
    ctx.set('Cache-Control', 'public, max-age=300');
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
    ctx.body = presentModel(resolve(ctx.params.modelId!));
  });
  return router;
}
