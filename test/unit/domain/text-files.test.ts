import { charsetOf, parseDataUrl, readTextFile } from '../../../src/domain/fields';

const base64 = (bytes: number[]) => Buffer.from(bytes).toString('base64');

describe('text files read in their charset', () => {
  test('UTF-8 unless named; a byte order mark dropped; bytes that are not UTF-8 refused, not replaced', () => {
    expect(readTextFile(Buffer.from('\ufeffcafé').toString('base64'), undefined)).toEqual({ text: 'café' });
    expect(readTextFile(base64([0x63, 0xe9]), undefined)).toEqual({ refused: expect.stringMatching(/not valid UTF-8 text \(name its charset/) });
    expect(readTextFile(base64([0x63]), 'klingon')).toEqual({ refused: expect.stringMatching(/charset "klingon" is not one the gateway reads/) });
  });

  test.each(['windows-1252', 'cp1252', 'iso-8859-1', 'latin1', 'us-ascii'])('%s is read as Windows-1252 (€, curly quotes and dashes, not C1 controls)', (charset) => {
    // "€5 “q” a–b é"
    expect(readTextFile(base64([0x80, 0x35, 0x20, 0x93, 0x71, 0x94, 0x20, 0x61, 0x96, 0x62, 0x20, 0xe9]), charset)).toEqual({ text: '€5 “q” a–b é' });
  });

  test('other charsets through the platform decoder (Shift_JIS)', () => {
    expect(readTextFile(base64([0x82, 0xa0]), 'shift_jis')).toEqual({ text: 'あ' });
  });

  test('data: URLs with parameters (RFC 2397); the charset parameter apart', () => {
    expect(parseDataUrl('data:Text/Plain;charset=ISO-8859-1;name=a.txt;base64,QQ==')).toEqual({ mediaType: 'text/plain', charset: 'ISO-8859-1', data: 'QQ==' });
    expect(parseDataUrl('data:application/pdf;name=a.pdf;base64,QQ==')).toEqual({ mediaType: 'application/pdf', data: 'QQ==' });
    expect(parseDataUrl('data:text/plain,hello')).toBeUndefined();
    expect(charsetOf('text/plain; charset="utf-16le"')).toBe('utf-16le');
  });
});
