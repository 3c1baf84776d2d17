// got 14, oidc-provider, otplib and parts of their dependency trees are ESM-only: the project stays CommonJS (Node 22 loads them
// through require(esm) at run time) and jest, which has its own module loader, transforms them with babel.
const esmPackages = [
  'got',
  '@sindresorhus/is',
  'byte-counter',
  'cacheable-lookup',
  'cacheable-request',
  'get-stream',
  '@sec-ant/readable-stream',
  'is-stream',
  'keyv',
  '@keyv/serialize',
  'mimic-response',
  'normalize-url',
  'responselike',
  'lowercase-keys',
  'decompress-response',
  'form-data-encoder',
  'p-cancelable',
  'request-filtering-agent',
  // sign-in: the OpenID Connect provider, its JOSE library, the TOTP library and the test relying party
  'oidc-provider',
  'jose',
  'otplib',
  '@otplib',
  '@noble/hashes',
  '@scure/base',
  'openid-client',
  'oauth4webapi',
];

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
    '^.+\\.m?js$': [
      'babel-jest',
      {
        plugins: ['@babel/plugin-transform-export-namespace-from', '@babel/plugin-transform-modules-commonjs'],
        babelrc: false,
        configFile: false,
      },
    ],
  },
  transformIgnorePatterns: [`/node_modules/(?!(${esmPackages.join('|')})/)`],
  setupFiles: ['<rootDir>/test/support/captured-log.ts'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 60_000,
  maxWorkers: 2,
};
