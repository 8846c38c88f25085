// ESLint for the HTML viewer's script (src/export/viewer/viewer.js, run in
// the browser as a classic script) and for this test. run.sh lints before
// it opens the browser: tests/browser/lint.sh.
import js from '@eslint/js';
import globals from 'globals';

const rules = {
  eqeqeq: ['error', 'smart'],
  'no-var': 'error',
  'prefer-const': 'error',
  'no-shadow': 'error',
  'no-implicit-globals': 'error',
  'no-unused-vars': ['error', { args: 'after-used', argsIgnorePattern: '^_' }],
};

export default [
  js.configs.recommended,
  {
    files: ['src/export/viewer/**/*.js'],
    languageOptions: { ecmaVersion: 2020, sourceType: 'script', globals: globals.browser },
    rules,
  },
  {
    files: ['tests/browser/**/*.mjs'],
    languageOptions: { ecmaVersion: 2022, sourceType: 'module', globals: globals.node },
    rules,
  },
];
