#!/usr/bin/env bash
# TypeScript conformance: every schema vector through ajv and the generated @agentmsg/schema package,
# every reducer vector through @agentmsg/client's reducer (sdk/typescript, installed as a user would:
# npm copies the folder in and its `prepare` script builds it). Installs the pinned npm packages (npm ci)
# when node_modules is missing or stale (the lock file, or one of the two packages from the repository,
# which npm copies in, changed), then runs node's test runner. Exits non-zero on any failure.
#
#   tests/typescript/run.sh             install if needed, run; prints one summary line
#                                       ("TypeScript: N passed, N failed, N skipped") and node's full
#                                       TAP report only when something failed (or AGENTMSG_TS_VERBOSE=1)
#   tests/typescript/run.sh --prepare   install only (`make test` does this first)
#
# npm ci is bounded by AGENTMSG_NPM_TIMEOUT seconds (default 600) where `timeout` exists.
# AGENTMSG_TS_VERDICTS=<file> also writes ajv's verdict per vector case there (JSON).
set -euo pipefail
cd "$(dirname "$0")"

command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || {
  echo "run.sh: the TypeScript suite needs Node.js 20+ and npm on PATH" >&2
  exit 127
}
node -e 'process.exit(Number(process.versions.node.split(".")[0]) < 20 ? 1 : 0)' || {
  echo "run.sh: the TypeScript suite needs Node.js 20+; node is $(node --version)" >&2
  exit 1
}

stamp=node_modules/.agentmsg-stamp
want=$( (cat package.json package-lock.json .npmrc; find ../../generated/typescript ../../sdk/typescript/package.json ../../sdk/typescript/tsconfig.json ../../sdk/typescript/src ../../sdk/typescript/scripts -type f -not -path '*/node_modules/*' | LC_ALL=C sort | xargs cat) | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  bound=()
  if command -v timeout >/dev/null 2>&1; then bound=(timeout "${AGENTMSG_NPM_TIMEOUT:-600}"); fi
  # (npm warns about an unrelated user config on some machines; keep its exit status)
  ${bound[@]+"${bound[@]}"} npm ci --no-audit --no-fund --loglevel=error >/dev/null 2> >(grep -v "Unknown user config" >&2)
  echo "$want" > "$stamp"
fi

[ "${1:-}" = --prepare ] && exit 0

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
node --test --test-reporter=tap >"$log" 2>&1 || status=$?
# node's closing TAP lines: "# tests N", "# pass N", "# fail N", "# skipped N", ...
count() { sed -n "s/^# $1 \([0-9]*\)$/\1/p" "$log" | tail -1; }
if [ "$status" -ne 0 ] || [ -n "${AGENTMSG_TS_VERBOSE:-}" ] || [ -z "$(count pass)" ]; then
  cat "$log"
fi
if [ -n "$(count pass)" ]; then
  echo "TypeScript: $(count pass) passed, $(count fail) failed, $(count skipped) skipped"
else
  echo "TypeScript: node --test printed no summary (exit status $status)"
  [ "$status" -ne 0 ] || status=1
fi
exit "$status"
