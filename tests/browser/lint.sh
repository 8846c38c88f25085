#!/usr/bin/env bash
# Lints the HTML viewer's script (src/export/viewer/*.js) and the browser
# test itself with the ESLint pinned in package.json (eslint.config.mjs).
# run.sh calls it before it opens the browser; it needs `npm ci` here.
# Exit: 0 clean, 1 lint errors or warnings.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
eslint="$here/node_modules/.bin/eslint"
if [ ! -x "$eslint" ]; then
  echo "lint.sh: ESLint is not installed (cd tests/browser && npm ci)" >&2
  exit 1
fi
cd "$root"
"$eslint" --config tests/browser/eslint.config.mjs --max-warnings 0 --no-warn-ignored \
  src/export/viewer tests/browser/*.mjs
echo "lint.sh: viewer script and browser test are clean" >&2
