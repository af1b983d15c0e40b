"""TypedDicts for the agent events, generated from schemas/agent-event.schema.json.

The reducer and the emitter work on plain dicts (the fastest form, and what JSON gives); these types
let a user's type checker see the keys of each event type without changing that. One TypedDict per
event type (``TextBlockDeltaEventDict``), one per nested object the event schema defines
(``ConfirmResultDict``), and ``AgentEventDict``, the union. Objects defined in other schemas (a
message, a content block, usage) are ``dict[str, Any]``; enums become ``Literal``s.

Called by generate.py (so ``make codegen`` writes it and ``--check`` catches drift).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MODULE = "agent_event_dicts.py"
SCHEMA = "agent-event.schema.json"


def _load(schemas: Path) -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text(encoding="utf-8")) for p in sorted(schemas.glob("*.schema.json"))}


class _Types:
    def __init__(self, docs: dict[str, dict[str, Any]]) -> None:
        self.docs = docs
        self.own = docs[SCHEMA]["$defs"]

    def resolve(self, ref: str, doc: str) -> tuple[str, dict[str, Any]]:
        target, _, fragment = ref.partition("#")
        name = target or doc
        node: Any = self.docs[name]
        for part in [p for p in fragment.split("/") if p]:
            node = node[part]
        return name, node

    def annotation(self, node: dict[str, Any], doc: str = SCHEMA) -> str:
        if "$ref" in node:
            name, target = self.resolve(node["$ref"], doc)
            if name == SCHEMA and _is_struct(target):
                return f"{target['title']}Dict"
            if _is_struct(target) or target.get("type") == "object":
                return "dict[str, Any]"
            return self.annotation(target, name)
        if "const" in node:
            return f"Literal[{json.dumps(node['const'])}]"
        if "enum" in node:
            return "Literal[" + ", ".join(json.dumps(v) for v in node["enum"]) + "]"
        for key in ("anyOf", "oneOf"):
            if key in node:
                options = sorted({self.annotation(x, doc) for x in node[key]})
                return "Any" if "Any" in options else " | ".join(options)
        kind = node.get("type")
        if isinstance(kind, list):
            return " | ".join(self.annotation({**node, "type": k}, doc) for k in kind)
        if kind == "array":
            return f"list[{self.annotation(node.get('items', {}), doc)}]"
        return {
            "string": "str",
            "integer": "int",
            "number": "float",
            "boolean": "bool",
            "null": "None",
            "object": "dict[str, Any]",
        }.get(kind, "Any")


def _is_struct(node: dict[str, Any]) -> bool:
    return isinstance(node.get("properties"), dict) and not node.get("x-agentmsg-map")


def _doc(text: str, indent: str) -> list[str]:
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return [f'{indent}"""{text}"""']


def render(schemas: Path, header: str) -> str:
    docs = _load(schemas)
    types = _Types(docs)
    root = docs[SCHEMA]
    lines = [
        header,
        "",
        '"""TypedDicts of the agent events (from agent-event.schema.json): static types for the event dicts',
        'the reducer reads and the emitter writes. At run time they are plain dicts."""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any, Literal, TypedDict, Union",
        "",
    ]
    union: list[str] = []
    names: list[str] = []
    for key, node in root["$defs"].items():
        if not _is_struct(node):
            continue
        name = f"{node['title']}Dict"
        names.append(name)
        if key.endswith("Event"):
            union.append(name)
        required = set(node.get("required", []))
        props = node["properties"]
        groups = [
            (f"_{name}Required", [p for p in props if p in required], ""),
            (name, [p for p in props if p not in required], ", total=False"),
        ]
        base = "TypedDict"
        for class_name, fields, total in groups:
            if class_name != name and not fields:
                continue
            lines += ["", "", f"class {class_name}({base}{total}):"]
            lines += _doc(node.get("description", ""), "    ")
            for field in fields:
                prop = props[field]
                lines.append(f"    {field}: {types.annotation(prop)}")
                if prop.get("description"):
                    lines += _doc(prop["description"], "    ")
            base = class_name
    lines += ["", "", "AgentEventDict = Union[", *(f"    {n}," for n in union), "]"]
    lines += ['"""Any agent event, as a dict (discriminated by ``type``)."""', ""]
    lines += ["__all__ = [", *(f'    "{n}",' for n in sorted([*names, "AgentEventDict"])), "]", ""]
    return "\n".join(lines)


def write(schemas: Path, out_dir: Path, header: str) -> None:
    (out_dir / MODULE).write_text(render(schemas, header), encoding="utf-8")
