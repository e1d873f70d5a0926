import { sseMessage } from '../sse';
import { asArray, asRecord, type SimProtocol } from './protocol';
import { citedSpan, searchResults, SimError, wordDeltas, type Plan } from './script';

const STATUS_NAMES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

function usageMetadata(plan: Plan) {
  const prompt = plan.usage.input + plan.usage.cacheRead + plan.usage.cacheWrite;
  return {
    promptTokenCount: prompt,
    candidatesTokenCount: plan.usage.output - plan.usage.reasoning,
    totalTokenCount: prompt + plan.usage.output,
    ...(plan.usage.cacheRead > 0 ? { cachedContentTokenCount: plan.usage.cacheRead } : {}),
    ...(plan.usage.reasoning > 0 ? { thoughtsTokenCount: plan.usage.reasoning } : {}),
  };
}

/**
 * Google reports with the candidate the queries a grounded answer ran, the pages it found, and
 * the text they support (segments in UTF-8 bytes, as Gemini counts them).
 */
function grounding(plan: Plan) {
  if (plan.webSearches === 0) return {};
  const { text, start } = citedSpan(plan);
  const pages = searchResults(plan);
  return {
    groundingMetadata: {
      webSearchQueries: pages.map((_, i) => `simulated query ${i + 1}`),
      groundingChunks: pages.map(({ url, title }) => ({ web: { uri: url, title } })),
      groundingSupports:
        plan.words.length > 0
          ? [{ segment: { startIndex: Buffer.byteLength(text.slice(0, start)), endIndex: Buffer.byteLength(text), text: text.slice(start) }, groundingChunkIndices: pages.map((_, i) => i) }]
          : [],
    },
  };
}

/** With thinking on, Gemini signs a turn's first function call (the signature must come back with it). */
const callPart = (plan: Plan, call: Plan['toolCalls'][number], index: number) => ({
  functionCall: { name: call.name, args: call.input },
  ...(index === 0 && plan.reasoning.length > 0 ? { thoughtSignature: `sim-sig-${plan.id}` } : {}),
});

const finishReason = (plan: Plan) => (plan.finish === 'length' || plan.finish === 'context_window' ? 'MAX_TOKENS' : 'STOP');

export const googleProtocol: SimProtocol = {
  parse(body, rawBody, pathModel) {
    const contents = asArray(body.contents).map(asRecord);
    if (contents.length === 0) throw new SimError(400, '* GenerateContentRequest.contents: contents is not specified');
    let inputChars = asArray(asRecord(body.systemInstruction).parts).reduce<number>((sum, part) => sum + String(asRecord(part).text ?? '').length, 0);
    for (const content of contents) {
      if (content.role !== 'user' && content.role !== 'model') throw new SimError(400, `* GenerateContentRequest.contents: invalid role ${String(content.role)}`);
      for (const part of asArray(content.parts).map(asRecord)) {
        if (typeof part.text === 'string') inputChars += part.text.length;
        if (part.functionCall) inputChars += JSON.stringify(asRecord(part.functionCall).args ?? {}).length;
        if (part.functionResponse) inputChars += JSON.stringify(asRecord(part.functionResponse).response ?? {}).length;
      }
    }
    const declarations = asArray(body.tools).flatMap((tool) => asArray(asRecord(tool).functionDeclarations).map(asRecord));
    inputChars += declarations.length > 0 ? JSON.stringify(declarations).length : 0;
    const last = contents[contents.length - 1]!;
    const lastParts = last.role === 'user' ? asArray(last.parts).map(asRecord) : [];
    let toolRounds = 0;
    let promptText = '';
    for (let i = contents.length - 1; i >= 0; i--) {
      const content = contents[i]!;
      const parts = asArray(content.parts).map(asRecord);
      if (content.role === 'model' && parts.some((p) => p.functionCall)) toolRounds++;
      const text = content.role === 'user' ? parts.filter((p) => typeof p.text === 'string').map((p) => String(p.text)).join('\n') : '';
      if (text) {
        promptText = text;
        break;
      }
    }
    const generationConfig = asRecord(body.generationConfig);
    const responseSchema = generationConfig.responseJsonSchema ?? generationConfig.responseSchema;
    return {
      provider: 'google',
      ...(responseSchema ? { responseSchema: asRecord(responseSchema) } : {}),
      model: pathModel ?? '',
      lastUserText: lastParts.filter((p) => typeof p.text === 'string').map((p) => String(p.text)).join('\n'),
      toolResults: lastParts
        .filter((p) => p.functionResponse)
        .map((p) => {
          const response = asRecord(asRecord(p.functionResponse).response);
          return typeof response.content === 'string' ? response.content : JSON.stringify(response);
        }),
      promptText,
      toolRounds,
      toolsOffered: declarations.map((d) => String(d.name)),
      webSearchOffered: asArray(body.tools).some((tool) => asRecord(tool).googleSearch !== undefined),
      inputChars,
      maxTokens: generationConfig.maxOutputTokens as number | undefined,
      rawBody,
      stream: false,
      options: { includeThoughts: asRecord(generationConfig.thinkingConfig).includeThoughts === true },
    };
  },

  render(plan, options) {
    const parts: Record<string, unknown>[] = [];
    if (plan.reasoning.length > 0 && options.includeThoughts) parts.push({ text: plan.reasoning.join(' '), thought: true });
    if (plan.words.length > 0) parts.push({ text: plan.words.join(' ') });
    plan.toolCalls.forEach((call, index) => parts.push(callPart(plan, call, index)));
    return {
      candidates: [{ content: { role: 'model', parts }, finishReason: finishReason(plan), index: 0, ...grounding(plan) }],
      usageMetadata: usageMetadata(plan),
      modelVersion: plan.model.name,
      responseId: plan.id,
    };
  },

  streamEvents(plan, options) {
    const chunk = (parts: Record<string, unknown>[], last = false) =>
      sseMessage({
        candidates: [{ content: { role: 'model', parts }, ...(last ? { finishReason: finishReason(plan), ...grounding(plan) } : {}), index: 0 }],
        usageMetadata: last ? usageMetadata(plan) : { promptTokenCount: plan.usage.input + plan.usage.cacheRead + plan.usage.cacheWrite },
        modelVersion: plan.model.name,
        responseId: plan.id,
      });
    const events: string[] = [];
    if (options.includeThoughts) for (const delta of wordDeltas(plan.reasoning)) events.push(chunk([{ text: delta, thought: true }]));
    for (const delta of wordDeltas(plan.words)) events.push(chunk([{ text: delta }]));
    plan.toolCalls.forEach((call, index) => events.push(chunk([callPart(plan, call, index)])));
    events.push(chunk([], true));
    return events;
  },

  streamError(error) {
    return sseMessage(this.error(error).body);
  },
  error(error) {
    const message =
      error.kind === 'context'
        ? `The input token count (${(error as unknown as { inputTokens: number }).inputTokens}) exceeds the maximum number of tokens allowed (${(error as unknown as { limit: number }).limit}).`
        : error.message;
    return {
      status: error.status,
      body: { error: { code: error.status, message, status: STATUS_NAMES[error.status] ?? (error.status >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION') } },
      headers: error.status === 429 ? { 'retry-after': '1' } : undefined,
    };
  },
};
