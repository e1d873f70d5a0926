import { z } from 'zod';
import { joinUrl, postJson, readJson, type TransportSettings } from '../http';
import { InvalidUpstreamResponseError } from '../errors';
import type { MediaModelRecord } from '../catalog';
import type { CallOptions } from '../types';

export interface OpenAIMediaSettings extends Omit<TransportSettings, 'provider'> {
  /** Base URL including the version, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  apiKey?: string;
}

export const authorizationHeaders = (apiKey?: string): Record<string, string> => (apiKey ? { authorization: `Bearer ${apiKey}` } : {});

/** Only the fields the gateway reads; the rest of the upstream body passes through untouched. */
export const OpenAIImagesResponseSchema = z.looseObject({
  created: z.number(),
  data: z.array(z.looseObject({ b64_json: z.string().nullish(), url: z.string().nullish(), revised_prompt: z.string().nullish() })),
  usage: z
    .looseObject({
      input_tokens: z.number().int().nonnegative(),
      output_tokens: z.number().int().nonnegative(),
      input_tokens_details: z.looseObject({ image_tokens: z.number().int().nullish(), text_tokens: z.number().int().nullish() }).nullish(),
    })
    .nullish(),
});
export type OpenAIImagesResponse = z.infer<typeof OpenAIImagesResponseSchema>;

/**
 * OpenAI `POST /images/generations`. `body` is already in the OpenAI shape (the gateway's
 * request is that shape); only `model` is replaced with the provider's own name.
 */
export function createOpenAIImagesClient(settings: OpenAIMediaSettings) {
  const transport: TransportSettings = { ...settings, provider: 'openai' };
  const url = joinUrl(settings.baseUrl, 'images/generations');
  return {
    async generate(model: MediaModelRecord, body: Record<string, unknown>, options: CallOptions = {}): Promise<OpenAIImagesResponse> {
      const response = await postJson(transport, url, { ...body, model: model.name }, {
        model: model.id,
        headers: authorizationHeaders(settings.apiKey),
        signal: options.signal,
        isContextOverflow: () => false,
      });
      const parsed = OpenAIImagesResponseSchema.safeParse(await readJson(response, 'openai', model.id, options.signal));
      if (!parsed.success) throw new InvalidUpstreamResponseError('unreadable images response from openai', { provider: 'openai', model: model.id, retryable: false });
      return parsed.data;
    },
  };
}
