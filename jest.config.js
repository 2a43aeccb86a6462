/**
 * Jest compiles TypeScript (and ESM-only Middy) to CommonJS with SWC: no experimental flags,
 * and the same source runs under tsx and esbuild. See docs/toolchain.md.
 * @type {import('jest').Config}
 */
export default {
  // Node's, with an embedded DynamoDB per test file (test/support/environment.ts).
  testEnvironment: '<rootDir>/test/support/environment.ts',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.(t|j)sx?$': [
      '@swc/jest',
      { jsc: { target: 'es2023', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } },
    ],
  },
  // ESM-only packages: openapi-backend's @apidevtools/json-schema-ref-parser, p-limit (and its yocto-queue), p-map.
  transformIgnorePatterns: [
    '/node_modules/(?!(@middy|@apidevtools/json-schema-ref-parser|@aws/lambda-invoke-store|p-limit|yocto-queue|p-map)/)',
  ],
  moduleNameMapper: {
    '^@middy/(core|util|http-error-handler)$': '<rootDir>/node_modules/@middy/$1/index.js',
    // Its CommonJS build loads node:async_hooks with a dynamic import(), which jest's vm refuses; SWC
    // compiles the ESM build's import() to require().
    '^@aws/lambda-invoke-store$': '<rootDir>/node_modules/@aws/lambda-invoke-store/dist-es/invoke-store.js',
  },
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  setupFiles: ['<rootDir>/test/support/env.ts', '<rootDir>/test/support/sandbox-errors.ts'],
  testTimeout: 30000,
  // Jest's default, cores - 1, is one worker on 2 cores: every file in band in one process. One
  // worker per core keeps both busy while a file waits on Chromium or a CLI child; each worker
  // holds its own embedded DynamoDB (test/support/environment.ts), so none queues behind another.
  maxWorkers: '100%',
};
