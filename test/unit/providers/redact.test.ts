import { credentialsSent, redactCredentials } from '../../../src/providers/redact';

describe('redactCredentials', () => {
  test('removes the credentials a request sent, from any credential header or a key query parameter', () => {
    const sent = credentialsSent('https://generativelanguage.googleapis.com/v1beta/models/x:generateContent?key=google-query-key-123', {
      authorization: 'Bearer custom-token-abcdef',
      'x-api-key': 'anthropic-style-key-987',
      'content-type': 'application/json',
    });
    const text = redactCredentials('got custom-token-abcdef, anthropic-style-key-987 and google-query-key-123; application/json stays', sent);
    expect(text).toBe('got [redacted], [redacted] and [redacted]; application/json stays');
  });

  test('removes provider key shapes, masked ones included', () => {
    expect(redactCredentials('Incorrect API key provided: sk-proj-****abcd. See docs.', [])).toBe('Incorrect API key provided: [redacted]. See docs.');
    expect(redactCredentials('key AIzaSyA1234567890abcdef is invalid', [])).toBe('key [redacted] is invalid');
  });

  test('leaves ordinary error text alone', () => {
    const body = JSON.stringify({ error: { message: 'rate limit exceeded for task-based requests', type: 'rate_limit_error' } });
    expect(redactCredentials(body, credentialsSent('https://api.example.com/v1', { authorization: 'Bearer short' }))).toBe(body);
  });
});
