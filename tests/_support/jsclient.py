"""@agentmsg/client for the Python tests that run it in Node: its ``dist/`` is built (not committed), so
it is built here when its sources changed since the last build (``build.mjs --if-stale``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from agentmsg import AgentmsgError
from tests._support.procs import one_at_a_time
from tests.conftest import ROOT

NODE = shutil.which("node")
CLIENT_DIR = ROOT / "sdk" / "typescript"


def built_client() -> Path:
    """The client's ``dist/index.js``, built first when stale (needs Node and npm; the first build installs
    the pinned tooling with ``npm ci``). One build at a time: under pytest-xdist the workers that need the client
    wait on a lock while one builds (a build empties ``dist/`` first), then find it fresh."""
    assert NODE is not None
    with one_at_a_time(CLIENT_DIR):
        subprocess.run(
            [NODE, str(CLIENT_DIR / "scripts" / "build.mjs"), "--if-stale"],
            check=True,
            timeout=900,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
    return CLIENT_DIR / "dist" / "index.js"


def same_json(a: Any, b: Any) -> bool:
    """Whether a message from the client (parsed from its JSON) equals Python's: the same values with the
    same key order. What JavaScript cannot represent is compared as it can: a number by value (1500 and
    1500.0: JS has one number type), an integer beyond 2^53 as the double it becomes (JS numbers are
    doubles). A boolean equals only a boolean."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or (max(abs(a), abs(b)) >= 2**53 and float(a) == float(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def decoded_in_node(
    decoder: str, error: str, cases: list[dict[str, Any]], clock: str, tmp_path: Path
) -> list[dict[str, Any]]:
    """What the client's decoder class ``decoder`` (its error class ``error``) makes of each case (``{"stream",
    "strict"}``), run in Node from the built client (one process, :class:`NodeDecoder`): as :func:`decoded` gives
    Python's."""
    with NodeDecoder(decoder, error, clock, tmp_path) as node:
        return [node.decode(case["stream"], case["strict"]) for case in cases]


#: A Node script that runs one of the client's UI protocol decoders (``%(decoder)s``, raising ``%(error)s``) with a
#: fixed clock, as a server: one ``{stream, strict}`` JSON line in on stdin, one result JSON line out, what
#: :func:`decoded` gives (one Node process answers every case, every example of a Hypothesis test)
_DECODER_SERVER = """
import readline from "node:readline";
const { %(decoder)s, %(error)s } = await import(%(client)s);
for await (const line of readline.createInterface({ input: process.stdin })) {
  const { stream, strict } = JSON.parse(line);
  const d = new %(decoder)s({ strict, clock: () => %(clock)s });
  const events = [];
  let error = null;
  try {
    for (const item of stream) events.push(...d.feed(item));
    events.push(...d.close());
  } catch (e) {
    if (!(e instanceof %(error)s)) throw e;
    error = e.problems.map((p) => [p.pointer, p.rule, p.message]);
  }
  process.stdout.write(JSON.stringify({ events, notes: d.notes.map((p) => [p.pointer, p.rule, p.message]), error }) + "\\n");
}
"""


class NodeDecoder:
    """One of the client's UI protocol decoders (``decoder``, raising ``error``) in one Node process, for many
    streams in turn: :meth:`decode` gives what :func:`decoded` gives of one stream in Python. Close it (a context
    manager) to end the process."""

    def __init__(self, decoder: str, error: str, clock: str, tmp_path: Path) -> None:
        assert NODE is not None
        script = tmp_path / f"{decoder}-server.mjs"
        values = {
            "decoder": decoder,
            "error": error,
            "client": json.dumps(built_client().as_uri()),
            "clock": json.dumps(clock),
        }
        script.write_text(_DECODER_SERVER % values, encoding="utf-8")
        self._proc = subprocess.Popen(
            [NODE, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8"
        )

    def decode(self, stream: list[Any], strict: bool) -> dict[str, Any]:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps({"stream": stream, "strict": strict}) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        assert line, f"the Node decoder ended (exit {self._proc.poll()})"
        out: dict[str, Any] = json.loads(line)
        return out

    def __enter__(self) -> NodeDecoder:
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        self._proc.wait(timeout=60)


def decoded(decoder: Any, stream: list[Any]) -> dict[str, Any]:
    """What a Python UI protocol decoder makes of ``stream``: its events (up to a strict decoder's error), its notes
    and the error's problems (pointer, rule, message), as JSON values."""
    events: list[Any] = []
    error = None
    try:
        for item in stream:
            events += decoder.feed(item)
        events += decoder.close()
    except AgentmsgError as exc:
        error = [[p.pointer, p.rule, p.message] for p in getattr(exc, "problems", ())]
    result = {"events": events, "notes": [[p.pointer, p.rule, p.message] for p in decoder.notes], "error": error}
    out: dict[str, Any] = json.loads(json.dumps(result))
    return out
