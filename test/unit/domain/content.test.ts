import { checkImageRequest, cleanAltText, type ImageGenerationRequest } from '../../../src/domain/content';

describe('cleanAltText', () => {
  test('cuts at a word boundary within max_length characters', () => {
    expect(cleanAltText('"A red bicycle leaning against a brick wall."', 20)).toBe('A red bicycle');
  });

  test('counts characters, not UTF-16 units, and never splits an emoji', () => {
    const emoji = '😀'.repeat(200);
    const cut = cleanAltText(emoji, 137);
    expect([...cut]).toHaveLength(137);
    expect(cut).toBe('😀'.repeat(137));
    // A short emoji answer is not cut at all (it is 100 characters, 200 UTF-16 units).
    expect(cleanAltText('😀'.repeat(100), 125)).toBe('😀'.repeat(100));
    expect(cleanAltText(`a ${'😀'.repeat(30)} b ${'😀'.repeat(30)}`, 40)).toBe(`a ${'😀'.repeat(30)} b`);
  });
});

test('cleanAltText: quotes wrapping the answer are dropped however many; a long answer is read only as far as needed', () => {
  expect(cleanAltText(`${'"'.repeat(50_000)}A cat${'"'.repeat(50_000)}`, 125)).toBe('A cat');
  expect(cleanAltText(`x${'"'.repeat(100_000)}x`, 10)).toBe(`x${'"'.repeat(9)}`);
  expect(cleanAltText(`“A dog on a sofa”`, 125)).toBe('A dog on a sofa');
});

describe('checkImageRequest', () => {
  test('prompt limits count characters: 4000 emoji pass for dall-e-3, 4001 do not', () => {
    const request = (prompt: string) => ({ model: 'openai/dall-e-3', prompt }) as ImageGenerationRequest;
    expect(checkImageRequest(request('😀'.repeat(4000)), 'dall-e-3', 'openai/dall-e-3')).toBeUndefined();
    expect(checkImageRequest(request('😀'.repeat(4001)), 'dall-e-3', 'openai/dall-e-3')).toMatchObject({ param: 'prompt' });
  });
});
