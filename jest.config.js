// Three projects: `unit` (pure, no services), `integration` (real Postgres, Elasticsearch,
// Temporal and the provider simulator over HTTP; files run in parallel with unique ids),
// and `disruptive` (stops and restarts shared services, so it runs alone, after the others).
const transform = { '^.+\\.(t|j)sx?$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } } }] };
const common = { transform, testEnvironment: 'node', moduleFileExtensions: ['ts', 'js', 'json'] };

module.exports = {
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts', '<rootDir>/test/replay/**/*.test.ts'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      setupFilesAfterEnv: ['<rootDir>/test/support/timeout-integration.ts'],
    },
    {
      ...common,
      displayName: 'disruptive',
      testMatch: ['<rootDir>/test/disruptive/**/*.test.ts'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      setupFilesAfterEnv: ['<rootDir>/test/support/timeout-disruptive.ts'],
    },
  ],
};
