"""``agentmsg reduce`` as a subprocess, on input the reducer must survive."""

from __future__ import annotations

from typing import Any

from tests._support.events import ev, jsonl


def test_cli_reduce_of_invalid_utf8_prints_messages(tmp_path: Any) -> None:
    from tests._support.cli import run

    path = tmp_path / "bad.jsonl"
    path.write_bytes(
        jsonl([ev(0, "AGENT_START")])
        + b'{"type":"TEXT_BLOCK_DELTA","id":"e1","createdAt":"2025-01-01T00:00:00Z","replyId":"r","blockId":"t","delta":"\xed\xa0\x80"}\n'
        + b"\xff\xfe\n"
    )
    out = run("reduce", str(path))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert len(out.stdout.splitlines()) == 1 and "[utf-8]" in out.stderr and "[json]" in out.stderr
