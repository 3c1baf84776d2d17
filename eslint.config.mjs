// Type-aware lint: typescript-eslint's recommended rules with type information, for every TypeScript file.
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';
import { createRequire } from 'node:module';

/** The layers of docs/design.md as a rule, and where queries may be: lint/layers.cjs. */
const { layers, queriesOutOfPlace } = createRequire(import.meta.url)('./lint/layers.cjs');

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'dist/',
      '.build-test/',
      '.tools/',
      '.data/',
      'coverage/',
      '**/*.js',
      '**/*.mjs',
      '**/*.cjs',
    ],
  },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    // Express tells an error handler by its four parameters, so an unused `_next` must stay; a rest pattern names
    // what it leaves out with `_`.
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  {
    files: ['**/*.ts'],
    plugins: { project: { rules: { layers } } },
    rules: { 'project/layers': 'error' },
  },
  {
    // Queries only in store modules and the source reader (lint/layers.cjs).
    files: ['**/*.ts'],
    ignores: ['**/store/**', 'migration/source/**', 'test/**'],
    rules: {
      'no-restricted-syntax': ['error', ...queriesOutOfPlace],
    },
  },
  {
    // Tests read JSON answers (`res.body`) whose shape is what they assert: member access on them is the point.
    files: ['test/**/*.ts', 'scripts/record-histories.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/require-await': 'off',
    },
  },
);
