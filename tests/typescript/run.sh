#!/usr/bin/env bash
# TypeScript conformance: installs npm packages (copying in the current generated/typescript package),
# compiles the TypeScript reducer against the generated types, runs node's test runner.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --loglevel=error 2>&1 | grep -v "Unknown user config" || true
[ -d node_modules/ajv ] || { echo "npm ci failed" >&2; exit 1; }
rm -rf dist
npx --no-install tsc -p .
node --test
