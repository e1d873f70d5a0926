/**
 * Model ids from requests, resolved against the catalogs: chat models (chat completions,
 * content helpers that chat) and media models (images, speech, transcription) are apart, so
 * a model of the other kind is a 400 naming `model`, an unknown one 404.
 */
import { findMediaModel, findModel, isMediaModelId, listMediaModels, listModels, type Capability, type MediaCapability, type MediaModelRecord, type ModelRecord } from '../providers/catalog';
import { ApiError, badRequest } from './errors';

export const modelNotFound = (model: string) => new ApiError(404, 'not_found_error', `model '${model}' not found; see GET /v1/models`);

/**
 * A chat catalog model (with `capability`, when one is needed): 404 when unknown, 400 when it is
 * a media model or lacks the capability.
 */
export function chatModelFor(id: string, purpose: string, capability?: Capability): ModelRecord {
  // Model ids are `<provider>/<model-name>`: a bare name is a malformed value (400), not an unknown
  // model, and the message names the model it would be where only one provider has that name.
  if (!id.includes('/')) {
    const named = listModels().filter((m) => m.name === id && (!capability || m.capabilities.includes(capability)));
    throw badRequest(`model: must be <provider>/<model-name>${named.length === 1 ? ` (did you mean ${named[0]!.id}?)` : ''}; see GET /v1/models`, 'model');
  }
  const model = findModel(id);
  if (!model) throw isMediaModelId(id) ? badRequest(`model: ${id} is a media model and cannot be used for ${purpose}; see GET /v1/models for chat models`, 'model') : modelNotFound(id);
  if (capability && !model.capabilities.includes(capability)) throw badRequest(`model: ${id} lacks the '${capability}' capability needed for ${purpose}`, 'model');
  return model;
}

/** A media model with `capability`: 404 when unknown, 400 when it is a model of another kind. */
export function mediaModelFor(id: string, capability: MediaCapability): MediaModelRecord {
  const model = findMediaModel(id, capability);
  if (model) return model;
  const accepted = () => listMediaModels(capability).map((m) => m.id);
  // As for chat models: a bare name is malformed (400), naming the model it would be.
  if (!id.includes('/')) {
    const named = accepted().filter((candidate) => candidate.endsWith(`/${id}`));
    throw badRequest(`model: must be <provider>/<model-name>${named.length === 1 ? ` (did you mean ${named[0]}?)` : ''}; accepted here: ${accepted().join(', ')}`, 'model');
  }
  if (findModel(id) || isMediaModelId(id)) {
    throw badRequest(`model: ${id} does not support ${capability.replace('_', ' ')}; use one of ${accepted().join(', ')}`, 'model');
  }
  // GET /v1/models lists chat models only: the media models are named here.
  throw new ApiError(404, 'not_found_error', `model '${id}' not found; accepted here: ${accepted().join(', ')}`);
}
