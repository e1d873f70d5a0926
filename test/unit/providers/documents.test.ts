import { buildConversation } from '../../../activities/run-context';
import { findModel } from '../../../src/providers/catalog';
import { toAnthropicRequest } from '../../../src/providers/anthropic/request';
import { toGoogleRequest } from '../../../src/providers/google/request';
import { toOpenAIRequest } from '../../../src/providers/openai/request';
import type { UnifiedRequest } from '../../../src/providers/types';

// A user.message as the event log holds it: text, a text document, a PDF, a base64 text file and a link.
const pdf = Buffer.from('%PDF-1.4 fake').toString('base64');
const blocks = [
  { type: 'text', text: 'Summarize these.' },
  { type: 'document', title: 'Notes', context: 'from the meeting', source: { type: 'text', media_type: 'text/plain', data: 'We agreed on Friday.' } },
  { type: 'document', title: 'Contract', source: { type: 'base64', media_type: 'application/pdf', data: pdf } },
  { type: 'document', source: { type: 'base64', media_type: 'text/markdown', data: Buffer.from('# Plan\nship it').toString('base64') } },
  { type: 'document', title: 'Spec', source: { type: 'url', url: 'https://example.com/spec.pdf' } },
  { type: 'document', title: 'Budget', source: { type: 'base64', media_type: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', data: 'UEsDBA==' } },
];
const budget = '[attached application/vnd.openxmlformats-officedocument.spreadsheetml.sheet document "Budget": not readable as text]';
const agent = { id: 'a', model: 'm', system_prompt: null, temperature: null, max_tokens: null, reasoning_effort: null, tools: [], settings: null };
const event = { id: 'e1', session_id: 's', seq: '1', type: 'user.message', content: blocks, attributes: {}, usage: null, error_code: null, run_id: 'r1', processed_at: new Date(1), created_at: new Date(1) };
const request = (model: string): UnifiedRequest => ({ model: findModel(model)!, ...buildConversation({ agent, events: [event] }) });

describe('document blocks of a user.message reach the model as documents', () => {
  test('Anthropic: native document blocks for text and PDFs (title and context kept; a text file decoded); a link and other files as text', () => {
    const body = toAnthropicRequest(request('anthropic/claude-haiku-4-5'), false) as { messages: Array<{ content: unknown[] }> };
    expect(body.messages[0]!.content).toEqual([
      { type: 'text', text: 'Summarize these.' },
      { type: 'document', title: 'Notes', context: 'from the meeting', source: { type: 'text', media_type: 'text/plain', data: 'We agreed on Friday.' } },
      { type: 'document', title: 'Contract', source: { type: 'base64', media_type: 'application/pdf', data: pdf } },
      { type: 'document', source: { type: 'text', media_type: 'text/plain', data: '# Plan\nship it' } },
      { type: 'text', text: 'Spec\n[document at https://example.com/spec.pdf]' },
      { type: 'text', text: `Budget\n${budget}` },
    ]);
  });

  test('OpenAI: the PDF as a file part; text documents and links as text', () => {
    const body = toOpenAIRequest(request('openai/gpt-4o'), false) as { messages: Array<{ role: string; content: unknown }> };
    expect(body.messages.at(-1)!.content).toEqual([
      { type: 'text', text: 'Summarize these.' },
      { type: 'text', text: 'Notes\nfrom the meeting\nWe agreed on Friday.' },
      { type: 'file', file: { filename: 'Contract', file_data: `data:application/pdf;base64,${pdf}` } },
      { type: 'text', text: '# Plan\nship it' },
      { type: 'text', text: 'Spec\n[document at https://example.com/spec.pdf]' },
      { type: 'text', text: `Budget\n${budget}` },
    ]);
  });

  test('Google: the PDF inline; text documents and links as text', () => {
    const body = toGoogleRequest(request('google/gemini-2.5-flash')) as { contents: Array<{ parts: unknown[] }> };
    expect(body.contents[0]!.parts).toEqual([
      { text: 'Summarize these.' },
      { text: 'Notes\nfrom the meeting\nWe agreed on Friday.' },
      { inlineData: { mimeType: 'application/pdf', data: pdf } },
      { text: '# Plan\nship it' },
      { text: 'Spec\n[document at https://example.com/spec.pdf]' },
      { text: `Budget\n${budget}` },
    ]);
  });

  test('in system.message, documents are read as text (a file only named)', () => {
    const system = buildConversation({ agent, events: [{ ...event, type: 'system.message' }] }).system.map((part) => part.text);
    expect(system).toEqual(['Summarize these.', 'Notes\nfrom the meeting\nWe agreed on Friday.', 'Contract\n[attached application/pdf document "Contract": not readable as text]', '# Plan\nship it', 'Spec\n[document at https://example.com/spec.pdf]', `Budget\n${budget}`]);
  });
});
