"""The reference error reporter: validate the whole instance at once and descend into the branch a union's
``type`` selects by validating that branch's whole subtree again (what agentmsg did before the linear
reporter). Correct but about cubic in nesting depth: an oracle for small inputs only. The linear reporter
(agentmsg._codec.schemas) must report exactly the same (pointer, rule, message) problems."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from agentmsg._codec import schemas as s
from agentmsg.errors import pointer_of


def _leaf_errors(validator: Any, instance: Any, closed: bool, prefix: tuple[Any, ...] = ()) -> Iterator[Any]:
    for err in validator.iter_errors(instance):
        path = prefix + tuple(err.instance_path)
        location = str(err.absolute_keyword_location or "")
        keyword = err.schema_path[-1] if len(err.schema_path) else None
        if keyword in ("oneOf", "anyOf"):
            branch = s._union_branch(location, err.instance)  # (a union's branch: its type's, or not null)
            if branch is not None:
                yield from _leaf_errors(s._validator(branch, closed), err.instance, closed, path)
                continue
            if isinstance(err.instance, dict) and "type" in err.instance and s._union_at(location)[0] is not None:
                continue
        yield path, err


def reference_problems(instance: Any, kind: str, strict: bool = False) -> list[tuple[str, str, str]]:
    """(pointer, rule, message) of every problem, sorted and without duplicates, as agentmsg reports them."""
    validator = s._validator(s.schema_uri(kind), strict)
    if validator.is_valid(instance):
        return []
    out = set()
    for path, err in _leaf_errors(validator, instance, strict):
        p = s._problem(path, err)
        out.add((pointer_of(path), p.rule, p.message))
    return sorted(out)
