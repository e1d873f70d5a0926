import { parseDataUrl } from '../../domain/fields';
import { THINKING_BUDGETS } from '../reasoning';
import { documentAsText, type ImageSource, type UnifiedMessage, type UnifiedRequest } from '../types';
import { objectSchema } from '../tool-input';

/** Unified → Gemini generateContent request body. */
export function toGoogleRequest(request: UnifiedRequest): Record<string, unknown> {
  const toolNames = new Map<string, string>();
  for (const message of request.messages) {
    if (message.role === 'assistant') for (const part of message.content) if (part.type === 'tool-call') toolNames.set(part.id, part.name);
  }
  const body: Record<string, unknown> = {
    contents: mergeRoles(request.messages.map((message) => convertMessage(message, toolNames)).filter((c) => c.parts.length > 0)),
  };
  if (request.system && request.system.length > 0) body.systemInstruction = { parts: request.system.map((part) => ({ text: part.text })) };

  const tools: Record<string, unknown>[] = [];
  const functions = (request.tools ?? []).filter((tool) => tool.type === 'function');
  if (functions.length > 0) {
    tools.push({
      functionDeclarations: functions.map((tool) => ({
        name: tool.name,
        ...(tool.description !== undefined ? { description: tool.description } : {}),
        // Full JSON Schema (the older `parameters` field takes only an OpenAPI subset).
        parametersJsonSchema: objectSchema(tool.input_schema),
      })),
    });
  }
  if ((request.tools ?? []).some((tool) => tool.type === 'web_search')) tools.push({ googleSearch: {} });
  if (tools.length > 0) body.tools = tools;
  // A function-calling mode without function declarations is refused: it goes only with them.
  if (request.tool_choice !== undefined && functions.length > 0) {
    const choice = request.tool_choice;
    body.toolConfig = {
      functionCallingConfig:
        choice === 'auto' ? { mode: 'AUTO' } : choice === 'none' ? { mode: 'NONE' } : choice === 'required' ? { mode: 'ANY' } : { mode: 'ANY', allowedFunctionNames: [choice.name] },
    };
  }

  const generationConfig: Record<string, unknown> = {};
  if (request.max_tokens !== undefined) generationConfig.maxOutputTokens = request.max_tokens;
  if (request.temperature !== undefined) generationConfig.temperature = request.temperature;
  if (request.top_p !== undefined) generationConfig.topP = request.top_p;
  if (request.top_k !== undefined) generationConfig.topK = request.top_k;
  if (request.stop !== undefined) generationConfig.stopSequences = request.stop;
  if (request.response_format?.type === 'json_object') generationConfig.responseMimeType = 'application/json';
  if (request.response_format?.type === 'json_schema') {
    generationConfig.responseMimeType = 'application/json';
    if (request.response_format.json_schema.schema) generationConfig.responseJsonSchema = request.response_format.json_schema.schema;
  }
  const thinking = thinkingConfig(request);
  if (thinking) generationConfig.thinkingConfig = thinking;
  const { thinking_config: _ignored, ...otherOptions } = request.provider_options ?? {};
  // Provider knobs the gateway does not model; never one of the fields set above (the route also refuses those).
  for (const [key, value] of Object.entries(otherOptions)) if (!(key in generationConfig)) generationConfig[key] = value;
  if (Object.keys(generationConfig).length > 0) body.generationConfig = generationConfig;
  return body;
}

function thinkingConfig(request: UnifiedRequest): Record<string, unknown> | undefined {
  const options = request.provider_options?.thinking_config as { thinking_budget?: number; include_thoughts?: boolean } | undefined;
  if (options) {
    return {
      ...(options.thinking_budget !== undefined ? { thinkingBudget: options.thinking_budget } : {}),
      ...(options.include_thoughts !== undefined ? { includeThoughts: options.include_thoughts } : {}),
    };
  }
  if (request.thinking?.type === 'disabled') return { thinkingBudget: 0 };
  if (request.thinking?.type === 'enabled') {
    return { ...(request.thinking.budget_tokens !== undefined ? { thinkingBudget: request.thinking.budget_tokens } : {}), includeThoughts: request.thinking.include_thoughts ?? true };
  }
  if (request.reasoning_effort !== undefined) {
    const budget = THINKING_BUDGETS[request.reasoning_effort] ?? THINKING_BUDGETS.medium!;
    return budget === 0 ? { thinkingBudget: 0 } : { thinkingBudget: budget, includeThoughts: true };
  }
  return undefined;
}

function inline(source: ImageSource): Record<string, unknown> {
  if (source.kind === 'base64') return { inlineData: { mimeType: source.media_type, data: source.data } };
  const data = parseDataUrl(source.url);
  if (data) return { inlineData: { mimeType: data.mediaType, data: data.data } };
  const mimeType = imageTypeOfUrl(source.url);
  return { fileData: { ...(mimeType ? { mimeType } : {}), fileUri: source.url } };
}

const IMAGE_TYPES: Record<string, string> = { png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', webp: 'image/webp', gif: 'image/gif', heic: 'image/heic', heif: 'image/heif' };

/** A linked image's media type, from its file extension (Gemini's `fileData` asks for one). */
function imageTypeOfUrl(url: string): string | undefined {
  try {
    const extension = /\.([a-z0-9]+)$/i.exec(new URL(url).pathname)?.[1]?.toLowerCase();
    return extension ? IMAGE_TYPES[extension] : undefined;
  } catch {
    return undefined;
  }
}

function convertMessage(message: UnifiedMessage, toolNames: Map<string, string>): { role: string; parts: Record<string, unknown>[] } {
  if (message.role === 'user') {
    const parts = message.content.flatMap((part): Record<string, unknown>[] => {
      if (part.type === 'text') return [{ text: part.text }];
      if (part.type === 'image') return [inline(part.source)];
      // A file goes inline (Gemini reads PDFs); text and links are read as text.
      if (part.type === 'document') return [part.source.type === 'base64' ? { inlineData: { mimeType: part.source.media_type, data: part.source.data } } : { text: documentAsText(part) }];
      if (part.type === 'tool-result') {
        const text = typeof part.content === 'string' ? part.content : part.content.map((p) => (p.type === 'text' ? p.text : '')).join('\n');
        return [
          {
            functionResponse: {
              id: part.tool_use_id,
              name: toolNames.get(part.tool_use_id) ?? part.tool_use_id,
              response: part.is_error ? { error: text } : { content: text },
            },
          },
        ];
      }
      return [];
    });
    return { role: 'user', parts };
  }
  const parts = message.content.flatMap((part): Record<string, unknown>[] => {
    if (part.type === 'text') return part.text === '' ? [] : [{ text: part.text }];
    if (part.type === 'reasoning') return [{ text: part.text, thought: true, ...(part.signature ? { thoughtSignature: part.signature } : {}) }];
    if (part.type === 'tool-call') return [{ functionCall: { id: part.id, name: part.name, args: part.input }, ...(part.signature ? { thoughtSignature: part.signature } : {}) }];
    return [];
  });
  return { role: 'model', parts };
}

function mergeRoles(contents: Array<{ role: string; parts: Record<string, unknown>[] }>) {
  const out: typeof contents = [];
  for (const content of contents) {
    const last = out[out.length - 1];
    if (last && last.role === content.role) last.parts.push(...content.parts);
    else out.push({ role: content.role, parts: [...content.parts] });
  }
  return out;
}
