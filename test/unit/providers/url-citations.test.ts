import { citationsPerPart, fromAnthropicCitations, fromGoogleGrounding, fromOpenAIAnnotations } from '../../../src/providers/url-citations';

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

  test('a segment beyond the text is clamped to it; a support naming a missing source is skipped', () => {
    const grounding = { groundingChunks: [{ web: { uri: 'https://a.example' } }], groundingSupports: [{ segment: { endIndex: 999 }, groundingChunkIndices: [0, 7] }] };
    expect(fromGoogleGrounding(grounding, 'abc')).toEqual([{ url: 'https://a.example', start: 0, end: 3 }]);
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

  test('citations over a whole answer go to the parts holding their starts, cut at the part end', () => {
    const perPart = citationsPerPart(
      ['abc', 'defg'],
      [
        { url: 'u1', start: 1, end: 6 },
        { url: 'u2', start: 3, end: 7 },
        { url: 'u3', start: 7, end: 7 },
      ],
    );
    expect(perPart).toEqual([[{ url: 'u1', start: 1, end: 3 }], [{ url: 'u2', start: 0, end: 4 }, { url: 'u3', start: 4, end: 4 }]]);
  });
});
