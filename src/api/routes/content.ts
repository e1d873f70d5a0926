import Router from '@koa/router';
import type { Deps } from '../../deps';
import type { AppContext, AppState } from '../types';
import type { GatewayOptions } from './gateway/gateway';
import { mountAltText } from './content/alt-text';
import { createContentServices } from './content/services';
import { mountImages } from './content/images';
import { mountSpeech } from './content/speech';
import { mountTaxonomy } from './content/taxonomy';
import { mountTranscriptions } from './content/transcriptions';

/**
 * The content helpers: taxonomy suggestion (chat:write), image generation and alt text
 * (image:write), speech (speech:write) and transcription (transcribe:write). Each is
 * moderated where the caller's text goes upstream, admitted on credits, and metered
 * under its own operation name. Payloads: docs/content-helpers.md.
 */
export function contentRouter(deps: Deps, options: GatewayOptions = {}): Router<AppState, AppContext> {
  const router = new Router<AppState, AppContext>();
  const services = createContentServices(deps, options);
  mountTaxonomy(router, services);
  mountAltText(router, services);
  mountImages(router, services);
  mountSpeech(router, services);
  mountTranscriptions(router, services);
  return router;
}
