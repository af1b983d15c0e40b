"""Generated code is deterministic, current, importable and matches the schemas."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import attrs

import agentmsg_models.content_block as blocks
import agentmsg_models.msg as msg
from tests.conftest import ROOT


def test_generated_is_up_to_date_and_deterministic(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, str(ROOT / "codegen" / "generate.py"), "--check"], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stdout + r.stderr
    out = tmp_path / "agentmsg_models"
    subprocess.run(
        [sys.executable, str(ROOT / "codegen" / "generate.py"), "--out", str(out)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    for path in (ROOT / "generated" / "agentmsg_models").rglob("*.py"):
        assert (out / path.name).read_text() == path.read_text(), path.name


def test_every_schema_property_is_a_field_with_its_wire_name() -> None:
    schemas = {p.name: json.loads(p.read_text()) for p in (ROOT / "schemas").glob("*.schema.json")}
    defs = schemas["content-block.schema.json"]["$defs"]
    for cls in (
        blocks.TextBlock,
        blocks.ThinkingBlock,
        blocks.ImageBlock,
        blocks.VideoBlock,
        blocks.DataBlock,
        blocks.ToolUseBlock,
        blocks.ToolResultBlock,
        blocks.HintBlock,
    ):
        wire = {a.metadata["wire"] for a in attrs.fields(cls) if "wire" in a.metadata}
        assert wire == set(defs[cls.__name__]["properties"]), cls.__name__
        assert [a.name for a in attrs.fields(cls) if a.metadata.get("unknown_keys")] == ["unknown_keys"]
    fields = attrs.fields(msg.Msg)
    assert {a.metadata["wire"] for a in fields if "wire" in a.metadata} == set(schemas["msg.schema.json"]["properties"])
    assert fields.unknown_keys.default is None


def test_generated_files_say_do_not_edit() -> None:
    for path in (ROOT / "generated" / "agentmsg_models").glob("*.py"):
        assert "DO NOT EDIT" in path.read_text().splitlines()[0]


BROKEN = {
    "a misspelt keyword": ('"properties"', '"propertes"', "unknown keyword 'propertes'"),
    "a ref to nothing": ('"#/$defs/TextBlock"', '"#/$defs/TextBlok"', "points at nothing"),
    "an unknown type": ('"type": "string"', '"type": "strin"', "unknown type 'strin'"),
    "a ref to no file": ('"source.schema.json"', '"sourc.schema.json"', "no schema 'sourc.schema.json'"),
    "no JSON": ("{", "{{", "not JSON"),
}


def test_a_broken_schema_stops_codegen_with_its_file_and_place(tmp_path: Path) -> None:
    """datamodel-code-generator took a misspelt keyword, a $ref to nothing or an unknown type and wrote a class with
    no fields or an `Any`, exit 0 (invalid JSON: a traceback naming no file). Each stops codegen now, exit 2, naming
    the file and the place, and nothing is written; from another working directory the output is the same."""
    import shutil

    for name, (old, new, said) in BROKEN.items():
        schemas = tmp_path / name.replace(" ", "-")
        shutil.copytree(ROOT / "schemas", schemas)
        path = schemas / "content-block.schema.json"
        text = path.read_text(encoding="utf-8")
        assert old in text, name
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
        out = tmp_path / f"out-{schemas.name}" / "agentmsg_models"
        done = subprocess.run(
            [sys.executable, str(ROOT / "codegen" / "generate.py"), "--schemas", str(schemas), "--out", str(out)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 2, (name, done.stderr[-500:])
        assert f"{schemas}/content-block.schema.json: " in done.stderr and said in done.stderr, (name, done.stderr)
        assert "Traceback" not in done.stderr and not out.exists(), name
    elsewhere = subprocess.run(
        [sys.executable, str(ROOT / "codegen" / "generate.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,  # (ruff read its settings from the working directory: 88 columns, "stale")
    )
    assert elsewhere.returncode == 0, elsewhere.stdout[-2000:]
