#!/usr/bin/env bash
# TypeScript conformance: every schema vector through ajv and the generated @agentmsg/schema package,
# every reducer vector through @agentmsg/client's reducer (sdk/typescript, its committed build).
# Installs the pinned npm packages (npm ci) when node_modules is missing or stale (the lock file, or
# one of the two packages from the repository, which npm copies in, changed), then runs node's test
# runner. Exits non-zero on any failure.
# AGENTMSG_TS_VERDICTS=<file> also writes ajv's verdict per vector case there (JSON).
set -euo pipefail
cd "$(dirname "$0")"

stamp=node_modules/.agentmsg-stamp
want=$( (cat package.json package-lock.json .npmrc; find ../../generated/typescript ../../sdk/typescript/package.json ../../sdk/typescript/dist -type f -not -path '*/node_modules/*' | LC_ALL=C sort | xargs cat) | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  # (npm warns about an unrelated user config on some machines; keep its exit status)
  npm ci --no-audit --no-fund --loglevel=error 2> >(grep -v 'Unknown user config' >&2)
  echo "$want" > "$stamp"
fi

node --test
