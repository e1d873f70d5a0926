import { checkApiConfig, ConfigError, loadConfig } from '../../src/config';

describe('loadConfig', () => {
  test('development runs on the built-in secret; any other environment must set its own', () => {
    expect(loadConfig({ ENVIRONMENT: 'development' }).GATEWAY_SECRET).toMatch(/^development-secret/);
    expect(() => loadConfig({ ENVIRONMENT: 'production' })).toThrow(ConfigError);
    expect(() => loadConfig({ ENVIRONMENT: 'production' })).toThrow(/GATEWAY_SECRET: the development default is public/);
    expect(loadConfig({ ENVIRONMENT: 'production', GATEWAY_SECRET: 'a'.repeat(64) }).GATEWAY_SECRET).toBe('a'.repeat(64));
  });

  test('the api needs its public address outside development (the OAuth issuer): an http(s) URL, kept without a trailing slash', () => {
    const production = { ENVIRONMENT: 'production', GATEWAY_SECRET: 'a'.repeat(64) };
    expect(() => checkApiConfig(loadConfig(production))).toThrow(/PUBLIC_BASE_URL: required when ENVIRONMENT is 'production'/);
    expect(checkApiConfig(loadConfig({ ...production, PUBLIC_BASE_URL: 'https://gateway.example.com/v/' })).PUBLIC_BASE_URL).toBe('https://gateway.example.com/v');
    expect(checkApiConfig(loadConfig({ ENVIRONMENT: 'development' })).PUBLIC_BASE_URL).toBeUndefined();
    for (const bad of ['ftp://gateway.example.com', 'https://gateway.example.com/?x=1', 'gateway.example.com']) {
      expect(() => loadConfig({ ...production, PUBLIC_BASE_URL: bad })).toThrow(/PUBLIC_BASE_URL/);
    }
  });

  test('a bad value is named', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
  });
});
