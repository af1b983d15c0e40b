#!/usr/bin/env bash
# Builds the AgentScope Java conformance harness (io.agentscope:agentscope-core:2.0.0 from Maven Central,
# io.agentscope:agentscope-extensions-model-{openai,anthropic}:2.0.0, cached in ~/.m2) and runs its modes
# (roundtrip, build, roles, formatters, schemas: networknt's validator, plus the extra stream) into OUT_DIR:
#
#   tests/java/run.sh [OUT_DIR]        (default: tests/java/out)
#   tests/java/run.sh --build-only     (only build the harness; `make test` does this before pytest)
#
# Maven runs only when the harness is missing or older than pom.xml or src/ (or a jar it needs left
# ~/.m2), bounded by AGENTMSG_MAVEN_TIMEOUT seconds (default 1200) where `timeout` exists.
# VECTORS_DIR is tests/conformance/vectors (override with AGENTMSG_VECTORS_DIR); missing vector files are
# skipped; the formatter vectors are read from tests/conformance/formatters (AGENTMSG_FORMATTERS_DIR).
# With AGENTMSG_JAVA_ROUNDTRIP_ONLY=1 only the roundtrip mode runs (one JVM instead of five: the tests of
# random messages read nothing else).
# Exits 0 whenever the Java side ran: the verdicts are compared by the Python tests
# (tests/conformance/test_java.py, test_java_formatters.py), not here. Extra Maven flags can be passed in MAVEN_ARGS (e.g. "-o").
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build_only=false
if [[ "${1:-}" == --build-only ]]; then build_only=true; shift; fi
out="${1:-$here/out}"
vectors="${AGENTMSG_VECTORS_DIR:-$root/tests/conformance/vectors}"
formatters="${AGENTMSG_FORMATTERS_DIR:-$root/tests/conformance/formatters}"
mvn_bin="${MVN:-mvn}"
java_bin="${JAVA:-java}"

for tool in "$mvn_bin" "$java_bin"; do
  command -v "$tool" >/dev/null 2>&1 || { echo "run.sh: $tool not found on PATH" >&2; exit 127; }
done

jar="$here/target/agentmsg-java-conformance.jar"
cpfile="$here/target/classpath.txt"
harness_is_fresh() {
  [[ -f "$jar" && -f "$cpfile" ]] || return 1
  [[ -z "$(find "$here/pom.xml" "$here/src" -newer "$jar" -print -quit)" ]] || return 1
  local dep deps
  IFS=: read -r -a deps < "$cpfile"
  for dep in "${deps[@]}"; do [[ -f "$dep" ]] || return 1; done
}

# Compile, jar, and write target/classpath.txt (the runtime jars in ~/.m2). The first build downloads
# agentscope-core, its dependencies and the pinned plugins from Maven Central; later builds are offline.
# (sed strips the stray ANSI resets Maven 3.8 prints even with -q -B; pipefail keeps Maven's exit status.)
if ! harness_is_fresh; then
  bound=()
  if command -v timeout >/dev/null 2>&1; then bound=(timeout "${AGENTMSG_MAVEN_TIMEOUT:-1200}"); fi
  # shellcheck disable=SC2086
  ${bound[@]+"${bound[@]}"} "$mvn_bin" -q -B ${MAVEN_ARGS:-} -f "$here/pom.xml" -DskipTests package 2>&1 \
    | sed -e $'s/\x1b\\[[0-9;]*m//g' >&2 \
    || { status=$?; [[ $status == 124 ]] && echo "run.sh: Maven took over ${AGENTMSG_MAVEN_TIMEOUT:-1200} s; stopped" >&2; exit "$status"; }
  touch "$jar"  # Maven leaves an up-to-date jar alone; the check above compares against this time
fi
$build_only && exit 0

mkdir -p "$out"
out="$(cd "$out" && pwd)"

cp="$here/target/agentmsg-java-conformance.jar:$(cat "$here/target/classpath.txt")"
run() { "$java_bin" -Xshare:auto -XX:TieredStopAtLevel=1 -cp "$cp" dev.agentmsg.conformance.Harness "$@"; }

if [[ -n "${AGENTMSG_JAVA_ROUNDTRIP_ONLY:-}" ]]; then
  run roundtrip "$vectors" "$out"
  exit 0
fi

# roundtrip, build, roles and formatters in one JVM (each JVM start costs about a second).
if [[ -d "$vectors" && -d "$formatters" ]]; then
  run all "$vectors" "$out" "$formatters"
else
  if [[ -d "$vectors" ]]; then
    run roundtrip "$vectors" "$out"
  else
    echo "run.sh: no vectors directory $vectors; skipping roundtrip" >&2
  fi
  run build "$out"
  run roles "$out"
  if [[ -d "$formatters" ]]; then
    run formatters "$formatters" "$out"
  else
    echo "run.sh: no formatter vectors directory $formatters; skipping formatters" >&2
  fi
fi
# networknt's json-schema-validator on every schema vector, with the schema files as they are.
schemas="${AGENTMSG_SCHEMAS_DIR:-$root/schemas}"
if [[ -d "$vectors" && -d "$schemas" ]]; then
  run schemas "$schemas" "$vectors" "$out"
fi
# Extra: a real ReActAgent driven by a scripted model (no network); its event stream as JSONL.
run stream "$out" || echo "run.sh: the extra stream mode failed (the other outputs are complete)" >&2

echo "run.sh: AgentScope Java wrote $(cd "$out" && ls | tr '\n' ' ')into $out" >&2
