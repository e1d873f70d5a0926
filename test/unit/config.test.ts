import { ConfigError, loadConfig } from '../../src/config';

describe('loadConfig', () => {
  test('development runs on the built-in secret; any other environment must set its own', () => {
    expect(loadConfig({ ENVIRONMENT: 'development' }).GATEWAY_SECRET).toMatch(/^development-secret/);
    expect(() => loadConfig({ ENVIRONMENT: 'production' })).toThrow(ConfigError);
    expect(() => loadConfig({ ENVIRONMENT: 'production' })).toThrow(/GATEWAY_SECRET: the development default is public/);
    expect(loadConfig({ ENVIRONMENT: 'production', GATEWAY_SECRET: 'a'.repeat(64) }).GATEWAY_SECRET).toBe('a'.repeat(64));
  });

  test('a bad value is named', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
  });
});
