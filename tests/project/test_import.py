"""What ``import agentmsg`` does, and leaves for first use: every process pays the import (each CLI run, a serverless
cold start, a test spawning a process), so the work that only decoding, validating or writing needs is done on the
first decode, validation or write. Checked in a fresh interpreter through ``sys.modules`` and the SDK's tables, each
time with the feature then used; no time is measured."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

#: modules ``import agentmsg`` leaves unimported: jsonschema-rs (which loads email.utils, among others) until the
#: first schema validator is built, the decode fast path until the first decode
LAZY_MODULES = ("jsonschema_rs", "email.utils", "agentmsg._codec.fastpath")


def _fresh(source: str) -> dict[str, Any]:
    """Run ``source`` after ``import agentmsg`` in a fresh interpreter (``LAZY`` is :data:`LAZY_MODULES`); it prints
    one JSON line, returned."""
    program = f"import json, sys\nimport agentmsg\nLAZY = {LAZY_MODULES!r}\n" + source
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def test_import_leaves_the_validators_and_the_fast_path_for_first_use() -> None:
    report = _fresh(
        """
from agentmsg import message, blocks
from agentmsg._codec import converter
at_import = {
    "modules": [m for m in LAZY if m in sys.modules],
    "decoding": message._decoding.done,
    "fast path": message._fast_path.done,
    "block tables": blocks._tables.done,
    "json hooks": len(converter.json_hooks),
    "spellings": converter._accepted_spellings.cache_info().currsize,
}
text = '{"id":"m1","name":null,"role":"USER","content":[{"type":"text","text":"hi"}],"metadata":{}}'
msg = agentmsg.Msg.from_json(text)
used = {
    "decoded": [type(msg).__name__, msg.to_json()],
    "conversation": len(agentmsg.decode_messages("[" + text + "," + text + "]")),
    "block": type(agentmsg.block_from_dict({"type": "text", "text": "x"})).__name__,
    "invalid": not agentmsg.is_valid({"type": "text"}, "content-block"),
    "modules": [m for m in LAZY if m in sys.modules],
}
print(json.dumps({"at_import": at_import, "used": used}))
"""
    )
    assert report["at_import"] == {
        "modules": [],
        "decoding": False,
        "fast path": False,
        "block tables": False,
        "json hooks": 0,
        "spellings": 0,
    }
    used = report["used"]
    assert used["decoded"][0] == "UserMessage"
    assert json.loads(used["decoded"][1])["content"] == [{"type": "text", "text": "hi"}]
    assert used["conversation"] == 2 and used["block"] == "TextBlock" and used["invalid"]
    assert used["modules"] == list(LAZY_MODULES)  # (email.utils with jsonschema_rs)


def test_the_first_write_has_every_hot_class_prepared() -> None:
    """The JSON hooks and C writer plans :func:`prepare_json` names are compiled by the first write, before it: the
    very first check of the C writer (which gives up on a class without a plan) already says a message writes."""
    from agentmsg._native import speedups

    if speedups is None:
        pytest.skip("the C writer is not built (or AGENTMSG_PURE_PYTHON=1)")
    report = _fresh(
        """
from agentmsg._codec import converter
from agentmsg.message import _BUILD_AS, MESSAGE_CLASSES
before = len(converter.native_plans)
msg = agentmsg.AssistantMessage([agentmsg.TextBlock(text="hi"), agentmsg.ToolUseBlock(id="c1", name="f", input={})])
first = converter.surely_writes([msg])
planned = [c.__qualname__ for c in [*_BUILD_AS, *_BUILD_AS.values(), *MESSAGE_CLASSES.values()]
           if c not in converter.native_plans]
print(json.dumps({"before": before, "first": first, "unplanned": planned, "bytes": msg.to_json()}))
"""
    )
    assert report["before"] == 0
    assert report["first"] is True
    assert report["unplanned"] == []
    assert json.loads(report["bytes"])["role"] == "ASSISTANT"


def test_import_agentmsg_imports_its_names_on_first_use() -> None:
    """``import agentmsg`` imports no module of the SDK nor msgspec (``agentmsg --help`` pays nothing more); each
    public name is its module's own object, imported on its first use, and ``agentmsg.events`` (a subpackage) is
    there after ``import agentmsg`` alone, as when the package imported its modules."""
    report = _fresh(
        """
import importlib
at_import = sorted(m for m in sys.modules if m.startswith(("agentmsg", "msgspec")))
same = {n: getattr(agentmsg, n) is getattr(importlib.import_module(agentmsg._HOME[n]), n)
        for n in agentmsg.__all__ if n != "__version__"}
star = {}
exec("from agentmsg import *", star)
print(json.dumps({"at_import": at_import, "same": same, "star": sorted(n for n in star if not n.startswith("__")),
                  "events": agentmsg.events.__name__, "dir": sorted(set(agentmsg.__all__) - set(dir(agentmsg)))}))
"""
    )
    import agentmsg

    assert report["at_import"] == ["agentmsg", "agentmsg._version"]
    assert report["same"] == {n: True for n in agentmsg.__all__ if n != "__version__"}
    assert report["star"] == sorted(n for n in agentmsg.__all__ if n != "__version__")
    assert report["events"] == "agentmsg.events"
    assert report["dir"] == []
    with pytest.raises(AttributeError, match="no attribute 'nothing_such'"):
        agentmsg.nothing_such  # noqa: B018


def test_the_names_typed_at_check_time_are_the_names_imported_on_first_use() -> None:
    """The package's ``if TYPE_CHECKING:`` imports (what mypy and editors see) and its table of first-use imports
    (``_HOMES``, what runs) name the same modules and names, so neither can drift from the other."""
    import ast

    import agentmsg

    tree = ast.parse(Path(agentmsg.__file__).read_text(encoding="utf-8"))
    typed: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module
                typed.setdefault(imp.module, set()).update(a.name for a in imp.names)
    assert typed == {module: set(names) for module, names in agentmsg._HOMES.items()}
    assert {n for names in typed.values() for n in names} == set(agentmsg.__all__) - {"__version__"}
