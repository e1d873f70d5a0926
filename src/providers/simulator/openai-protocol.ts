import { sseMessage } from '../sse';
import { asArray, asRecord, halves, type SimProtocol } from './protocol';
import { citedSpan, searchResults, SimError, wordDeltas, type Plan } from './script';

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'invalid_request_error',
  429: 'rate_limit_exceeded',
};

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  return asArray(content)
    .map((part) => asRecord(part))
    .filter((part) => part.type === 'text')
    .map((part) => String(part.text ?? ''))
    .join('\n');
}

function usage(plan: Plan) {
  const prompt = plan.usage.input + plan.usage.cacheRead + plan.usage.cacheWrite;
  return {
    prompt_tokens: prompt,
    completion_tokens: plan.usage.output,
    total_tokens: prompt + plan.usage.output,
    prompt_tokens_details: { cached_tokens: plan.usage.cacheRead },
    completion_tokens_details: { reasoning_tokens: plan.usage.reasoning },
  };
}

/** `image/png, 68 bytes` for data URLs, the URL itself otherwise. */
function describeImage(url: string): string {
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (!data) return url;
  return `${data[1]}, ${Buffer.from(data[2]!, 'base64').length} bytes`;
}

// OpenAI has no context-window reason: a reply cut by the window ends with `length`.
const finishReason = (plan: Plan) => (plan.finish === 'stop_sequence' ? 'stop' : plan.finish === 'context_window' ? 'length' : plan.finish);

/** A search model's answer cites one page per `[[web-search:N]]` search, each over the cited span. */
function annotations(plan: Plan) {
  if (plan.refusal || plan.words.length === 0) return [];
  const { text, start } = citedSpan(plan);
  return searchResults(plan).map(({ url, title }) => ({ type: 'url_citation', url_citation: { start_index: start, end_index: text.length, url, title } }));
}

export const openaiProtocol: SimProtocol = {
  parse(body, rawBody) {
    const messages = asArray(body.messages).map(asRecord);
    if (typeof body.model !== 'string') throw new SimError(400, 'you must provide a model parameter');
    if (messages.length === 0) throw new SimError(400, "'messages' must contain at least one message");
    if (body.max_tokens !== undefined && body.max_completion_tokens !== undefined) {
      throw new SimError(400, 'max_tokens and max_completion_tokens cannot both be set');
    }
    let inputChars = 0;
    const callIds = new Set<string>();
    for (const message of messages) {
      inputChars += textOf(message.content).length;
      for (const call of asArray(message.tool_calls).map(asRecord)) {
        callIds.add(String(call.id));
        inputChars += String(asRecord(call.function).arguments ?? '').length;
      }
      if (message.role === 'tool' && !callIds.has(String(message.tool_call_id))) {
        throw new SimError(400, "messages with role 'tool' must be a response to a preceding message with 'tool_calls'");
      }
    }
    const tools = asArray(body.tools).map(asRecord);
    inputChars += tools.length > 0 ? JSON.stringify(tools).length : 0;
    const last = messages[messages.length - 1]!;
    const toolResults: string[] = [];
    for (let i = messages.length - 1; i >= 0 && messages[i]!.role === 'tool'; i--) toolResults.unshift(textOf(messages[i]!.content));
    let toolRounds = 0;
    let promptText = '';
    for (let i = messages.length - 1; i >= 0; i--) {
      const message = messages[i]!;
      if (message.role === 'assistant' && asArray(message.tool_calls).length > 0) toolRounds++;
      if (message.role === 'user' && textOf(message.content)) {
        promptText = textOf(message.content);
        break;
      }
    }
    const format = asRecord(body.response_format);
    const schema = format.type === 'json_schema' ? asRecord(asRecord(format.json_schema).schema) : undefined;
    const images = last.role === 'user' ? asArray(last.content).map(asRecord).filter((part) => part.type === 'image_url').map((part) => describeImage(String(asRecord(part.image_url).url ?? ''))) : [];
    return {
      provider: 'openai',
      ...(schema ? { responseSchema: schema } : {}),
      ...(images.length > 0 ? { images } : {}),
      model: body.model,
      lastUserText: last.role === 'user' ? textOf(last.content) : '',
      toolResults,
      promptText,
      toolRounds,
      toolsOffered: tools.map((tool) => String(asRecord(tool.function).name)),
      inputChars,
      maxTokens: (body.max_completion_tokens ?? body.max_tokens) as number | undefined,
      rawBody,
      stream: body.stream === true,
      webSearchOffered: body.web_search_options != null,
      options: { includeUsage: asRecord(body.stream_options).include_usage === true },
    };
  },

  render(plan) {
    const text = plan.words.join(' ');
    return {
      id: `chatcmpl-${plan.id}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: plan.model.name,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: text.length > 0 && !plan.refusal ? text : null,
            refusal: plan.refusal ? text : null,
            ...(annotations(plan).length > 0 ? { annotations: annotations(plan) } : {}),
            ...(plan.reasoning.length > 0 ? { reasoning_content: plan.reasoning.join(' ') } : {}),
            ...(plan.toolCalls.length > 0
              ? { tool_calls: plan.toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.input) } })) }
              : {}),
          },
          logprobs: null,
          finish_reason: finishReason(plan),
        },
      ],
      usage: usage(plan),
    };
  },

  streamEvents(plan, options) {
    const created = Math.floor(Date.now() / 1000);
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      sseMessage({ id: `chatcmpl-${plan.id}`, object: 'chat.completion.chunk', created, model: plan.model.name, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
    const events = [chunk({ role: 'assistant', content: '' })];
    for (const delta of wordDeltas(plan.reasoning)) events.push(chunk({ reasoning_content: delta }));
    for (const delta of wordDeltas(plan.words)) events.push(chunk(plan.refusal ? { refusal: delta } : { content: delta }));
    if (annotations(plan).length > 0) events.push(chunk({ annotations: annotations(plan) }));
    plan.toolCalls.forEach((call, index) => {
      events.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }));
      for (const piece of halves(JSON.stringify(call.input))) events.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    });
    events.push(chunk({}, finishReason(plan)));
    if (options.includeUsage) {
      events.push(sseMessage({ id: `chatcmpl-${plan.id}`, object: 'chat.completion.chunk', created, model: plan.model.name, choices: [], usage: usage(plan) }));
    }
    events.push(sseMessage('[DONE]'));
    return events;
  },

  streamError(error) {
    return sseMessage(this.error(error).body);
  },
  error(error) {
    const code = error.kind === 'context' ? 'context_length_exceeded' : error.kind === 'model' ? 'model_not_found' : null;
    const message =
      error.kind === 'context'
        ? `This model's maximum context length is exceeded. ${error.message}`
        : error.message;
    return {
      status: error.status,
      body: { error: { message, type: ERROR_TYPES[error.status] ?? (error.status >= 500 ? 'server_error' : 'invalid_request_error'), param: null, code } },
      headers: error.status === 429 ? { 'retry-after': '1' } : undefined,
    };
  },
};
