#!/usr/bin/env bash
# TypeScript conformance: installs its npm packages when missing, then runs node's test runner.
set -euo pipefail
cd "$(dirname "$0")"
# npm ci every time: it copies the current generated/typescript package in (fast with the npm cache).
npm ci --no-audit --no-fund --loglevel=error
node --test
