import { fromAnthropicCitations, fromGroundingSupports, fromOpenAIAnnotations, GoogleGroundingSchema, groundingSupports, OpenAIAnnotationsSchema } from '../../../src/providers/url-citations';
import { fromAnthropicResponse } from '../../../src/providers/anthropic/response';
import { fromGoogleResponse } from '../../../src/providers/google/response';

const fromGoogleGrounding = (grounding: unknown, text: string) => fromGroundingSupports(groundingSupports(GoogleGroundingSchema.parse(grounding)), text);

describe('web-search citations', () => {
  test("Gemini's UTF-8 byte segments become UTF-16 offsets, astral characters included", () => {
    const text = 'héllo 🎉 world';
    const before = 'héllo 🎉 ';
    const grounding = {
      groundingChunks: [{ web: { uri: 'https://a.example', title: 'A' } }, { web: { uri: 'https://b.example' } }, { web: {} }],
      groundingSupports: [{ segment: { startIndex: Buffer.byteLength(before), endIndex: Buffer.byteLength(text) }, groundingChunkIndices: [0, 1, 2] }],
    };
    expect(fromGoogleGrounding(grounding, text)).toEqual([
      { url: 'https://a.example', title: 'A', start: before.length, end: text.length },
      { url: 'https://b.example', start: before.length, end: text.length },
    ]);
    expect(text.slice(before.length)).toBe('world');
  });

  test('a segment past the text is cut at its end, one wholly past it dropped; a support naming a missing source is skipped', () => {
    const grounding = { groundingChunks: [{ web: { uri: 'https://a.example' } }], groundingSupports: [{ segment: { endIndex: 999 }, groundingChunkIndices: [0, 7] }, { segment: { startIndex: 50, endIndex: 60 }, groundingChunkIndices: [0] }] };
    expect(fromGoogleGrounding(grounding, 'abc')).toEqual([{ url: 'https://a.example', start: 0, end: 3 }]);
  });

  test('an unreadable grounding support or annotation is skipped, not its siblings', () => {
    const grounding = GoogleGroundingSchema.parse({
      groundingChunks: [{ web: { uri: 'https://a.example' } }],
      groundingSupports: [{ segment: { startIndex: -1, endIndex: 2 }, groundingChunkIndices: [0] }, { segment: { startIndex: 0, endIndex: 2 }, groundingChunkIndices: [0] }],
    });
    expect(fromGroundingSupports(groundingSupports(grounding), 'abc')).toEqual([{ url: 'https://a.example', start: 0, end: 2 }]);
    const annotations = OpenAIAnnotationsSchema.parse([{ type: 'url_citation', url_citation: { start_index: 'x' } }, { type: 'url_citation', url_citation: { start_index: 0, end_index: 1, url: 'https://b.example' } }]);
    expect(fromOpenAIAnnotations(annotations)).toEqual([{ url: 'https://b.example', start: 0, end: 1 }]);
  });

  test("an unstreamed Gemini answer: a segment counts in the part partIndex names; spans over several parts are whole", () => {
    const body = {
      candidates: [
        {
          content: { parts: [{ text: 'thinking', thought: true }, { text: 'Hello ' }, { text: 'wörld of search.' }] },
          finishReason: 'STOP',
          groundingMetadata: {
            webSearchQueries: ['q'],
            groundingChunks: [{ web: { uri: 'https://a.example', title: 'A' } }],
            groundingSupports: [
              { segment: { startIndex: 0, endIndex: Buffer.byteLength('Hello wörld') }, groundingChunkIndices: [0] }, // no partIndex: the answer's text
              { segment: { partIndex: 2, startIndex: Buffer.byteLength('wörld '), endIndex: Buffer.byteLength('wörld of search.') }, groundingChunkIndices: [0] },
            ],
          },
        },
      ],
    };
    const result = fromGoogleResponse(body as never, 'gemini');
    const text = 'Hello wörld of search.';
    expect(result.url_citations).toEqual([
      { url: 'https://a.example', title: 'A', start: 0, end: 'Hello wörld'.length },
      { url: 'https://a.example', title: 'A', start: 'Hello wörld '.length, end: text.length },
    ]);
  });

  test('an Anthropic answer: each cited block spans its place in the joined text; unreadable citations are skipped', () => {
    const result = fromAnthropicResponse(
      {
        id: 'msg_1',
        content: [
          { type: 'text', text: 'Lead-in. ' },
          { type: 'tool_use', id: 't', name: 'x', input: {} },
          { type: 'text', text: 'cited', citations: [null, 7, { type: 'web_search_result_location', url: 'https://a.example', title: 'A' }] },
        ],
      },
      'claude',
    );
    expect(result.url_citations).toEqual([{ url: 'https://a.example', title: 'A', start: 'Lead-in. '.length, end: 'Lead-in. cited'.length }]);
  });

  test('OpenAI annotations: url citations only', () => {
    expect(
      fromOpenAIAnnotations([
        { type: 'url_citation', url_citation: { start_index: 2, end_index: 5, url: 'https://a.example', title: 'A' } },
        { type: 'file_citation' },
      ]),
    ).toEqual([{ url: 'https://a.example', title: 'A', start: 2, end: 5 }]);
  });

  test('Anthropic: one citation per URL over the whole block; document citations are not web pages', () => {
    const citations = [
      { type: 'web_search_result_location', url: 'https://a.example', title: 'A', cited_text: 'x' },
      { type: 'web_search_result_location', url: 'https://a.example', title: 'A', cited_text: 'y' },
      { type: 'char_location', document_index: 0, cited_text: 'z' },
    ];
    expect(fromAnthropicCitations(citations, 4, 9)).toEqual([{ url: 'https://a.example', title: 'A', start: 4, end: 9 }]);
  });

});
