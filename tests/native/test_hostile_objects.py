"""The C kernels (agentmsg._speedups) given objects that fight back: Python code run in the middle of a kernel (a
property, a key's ``__eq__``) that frees or changes what the kernel read before it, descriptors of another class's
layout, a table holding something else than what the kernel expects. Each case here was a use after free, an
out-of-bounds read or write, or a NULL dereference, found under AddressSanitizer and UBSan; each asserts what the
kernel now does instead (it keeps what it read alive, or gives up, or calls the class), with no sanitizer needed:
the memory an object freed too early held is reused by the next objects of its size, so the kernel would read
those.
"""

from __future__ import annotations

import os

import orjson
import pytest

from agentmsg._codec.converter import json_default
from agentmsg._native import speedups as native
from tests.conftest import c_compiler_available

if native is None:
    if os.environ.get("AGENTMSG_PURE_PYTHON"):
        pytestmark = pytest.mark.skip("AGENTMSG_PURE_PYTHON is set: the C kernels are turned off")
    elif not c_compiler_available():
        pytestmark = pytest.mark.skip("no C compiler or Python headers here: agentmsg was built without its C kernels")


def test_encode_and_writes_give_up_on_a_plan_table_holding_no_plan() -> None:
    assert native is not None

    class Model:
        pass

    table = {Model: "no plan"}
    assert native.encode(Model(), table, json_default, orjson.dumps) is None
    assert native.writes([Model()], table, json_default, orjson.dumps) is False
