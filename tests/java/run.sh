#!/usr/bin/env bash
# Builds the AgentScope Java harness (Maven resolves agentscope-core from Maven Central) and runs its
# three modes into OUT_DIR (default tests/java/out). Python (tests/conformance/test_java.py) checks the results.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$here/out}"
mkdir -p "$here/target" "$out"
mvn -q -B -f "$here/pom.xml" dependency:build-classpath -Dmdep.outputFile="$here/target/classpath.txt" >&2
cp="$(cat "$here/target/classpath.txt")"
javac -nowarn -d "$here/target/classes" -cp "$cp" $(find "$here/src/main/java" -name "*.java") >&2
run() { java -cp "$here/target/classes:$cp" dev.agentmsg.conformance.Harness "$@"; }
run roundtrip "$root/tests/conformance/vectors" "$out"
run build "$out"
run roles "$out"
echo "AgentScope Java harness wrote $(ls "$out" | tr '\n' ' ')" >&2
