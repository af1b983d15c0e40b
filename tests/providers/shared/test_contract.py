"""Every provider keeps the one contract (providers/base.py, docs/adding-a-provider.md): one module, one registry
line, a Spec per name, format_request, a Reader, Entry objects; and nothing outside providers/ knows a vendor."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path
from typing import Any, Final

import pytest

import agentmsg
from agentmsg import providers
from agentmsg.providers import MODULES, NAMES, get
from agentmsg.providers._response.parser import StreamParser
from agentmsg.providers._response.reader import PayloadReader
from agentmsg.providers.base import Entry, Provider, Spec

pytestmark = pytest.mark.no_kernel  # reaches none of the C kernels (tests/README.md, Runs)

SDK = Path(agentmsg.__file__).resolve().parent
#: The order of the sections of a provider module
SECTIONS = ("spec", "request", "payload values", "reader", "registry entries")


@pytest.mark.parametrize("module_name", MODULES)
def test_each_module_has_the_contracts_parts_in_its_order(module_name: str) -> None:
    module = importlib.import_module(f"agentmsg.providers.{module_name}")
    source = inspect.getsource(module)
    headings = [m.group(1) for m in re.finditer(r"^# ---- (.+?) -+$", source, re.M)]
    found = [next(s for s in SECTIONS if h.startswith(s)) for h in headings if any(h.startswith(s) for s in SECTIONS)]
    assert [s for s in SECTIONS if s in found] == list(SECTIONS), f"{module_name}: sections {headings}"
    assert found == sorted(found, key=SECTIONS.index), f"{module_name}: sections out of order: {found}"
    assert issubclass(module.Reader, PayloadReader) and module.Reader is not PayloadReader
    assert module.PROVIDERS and all(type(e) is Entry and e.reader is module.Reader for e in module.PROVIDERS)
    for name in ("format_request", "parse_response", "response_events", "parse_stream", "StreamParser"):
        assert callable(getattr(module, name)), f"{module_name}.{name}"
        assert name in module.__all__


@pytest.mark.parametrize("name", NAMES)
def test_each_registry_name_is_a_provider_with_its_spec(name: str) -> None:
    provider = get(name)
    assert isinstance(provider, Provider)
    spec = provider.spec
    assert isinstance(spec, Spec) and spec.name == name == provider.name
    assert spec.title and spec.default_model and spec.families and spec.env
    assert spec.base_url.startswith("https://") and not spec.base_url.endswith("/")
    assert spec.auth in ("bearer", "x-api-key", "x-goog-api-key")
    assert all(var == var.upper() and var.endswith("_API_KEY") for var in spec.env)
    request = provider.format_request([agentmsg.UserMessage("Hi")])
    assert request.model == spec.default_model and request.path.startswith("/")
    assert all(request.headers.get(k) == v for k, v in spec.headers.items())  # (the version header, in one place)
    assert isinstance(provider.stream_parser(), StreamParser)
    assert isinstance(provider.parser_options(request), dict)


def test_the_registry_lists_every_module_and_every_name_once() -> None:
    files = sorted(
        p.stem
        for p in (SDK / "providers").glob("*.py")
        if not p.stem.startswith("_") and p.stem not in ("base", "spec")
    )
    assert sorted(MODULES) == files
    assert len(set(NAMES)) == len(NAMES) == len(providers.providers())
    with pytest.raises(KeyError, match="unknown provider 'nope'; known: openai"):
        get("nope")


def _vendor_words() -> re.Pattern[str]:
    """The vendors' names: each module's, each registry name's first part, each title's first word."""
    words = set(MODULES)
    for p in providers.providers():
        words |= {p.spec.name.split("-")[0], p.spec.title.split()[0]}
    return re.compile(r"\b(?:" + "|".join(sorted(words, key=len, reverse=True)) + r")\b", re.I)


def _deprecated_stubs(tree: ast.Module) -> set[int]:
    """The nodes of the ``@deprecated`` classes declared for type checkers alone (``if TYPE_CHECKING:``): the old
    names pinned to one provider (``OpenAIClient``), which the runtime makes from the registry; a type checker needs
    them written out to flag their use. A new provider gets no such name."""
    found: set[int] = set()
    for block in tree.body:
        if isinstance(block, ast.If) and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING":
            for node in block.body:
                if isinstance(node, ast.ClassDef) and any(
                    isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "deprecated"
                    for d in node.decorator_list
                ):
                    found |= {id(n) for n in ast.walk(node)}
    return found


def _code_vendor_names(package: str, skip: frozenset[str] = frozenset()) -> list[str]:
    """The vendor names in the code of ``package`` (its modules but ``skip``): docstrings and comments may name one
    as an example, and the deprecated pinned classes their provider for type checkers (:func:`_deprecated_stubs`)."""
    vendor = _vendor_words()
    found: list[str] = []
    for path in sorted((SDK / package).rglob("*.py")):
        if path.name in skip:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        } | _deprecated_stubs(tree)
        for node in ast.walk(tree):
            if id(node) in docstrings:
                continue
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if vendor.search(node.value):
                    found.append(f"{path.relative_to(SDK)}:{node.lineno}: {node.value[:60]!r}")
            elif isinstance(node, ast.Name) and vendor.search(node.id):
                found.append(f"{path.relative_to(SDK)}:{node.lineno}: {node.id}")
    return found


@pytest.mark.parametrize("package", ["clients"])
def test_clients_name_no_vendor(package: str) -> None:
    """A vendor's facts live in its module: the clients read the registry, so a new provider needs no edit there
    (tests/cli/test_public.py holds the CLI to the same). Docstrings and comments may name one as an example, and
    the deprecated pinned classes their provider for type checkers (:func:`_deprecated_stubs`); the code may not."""
    found = _code_vendor_names(package)
    assert not found, "vendor names in code outside providers/:\n" + "\n".join(found)


#: context/'s tables of what a token profile names by value (``TokenProfile.vocab``, ``vocabs`` and ``image``): the
#: vocabularies and the packages that hold them, and the image pricing methods. They name a method, not a provider:
#: a new provider's spec names the ones it takes, and only a new vocabulary or pricing method is added there
_CONTEXT_METHOD_TABLES: Final = frozenset({"_tokenizers.py", "_media.py"})


def test_context_names_no_vendor() -> None:
    """``agentmsg.context`` reads each provider's rules from its spec (cache markers: ``Spec.cache_markers``; the
    token profile and its vocabulary rule: ``Spec.tokens``; trim's rules: ``user_first``, ``signature_chain``), so a
    new provider needs no edit there (tests/context/test_own_provider.py uses one defined in the test). The code
    names no vendor, but for the tables of vocabularies and pricing methods (:data:`_CONTEXT_METHOD_TABLES`)."""
    found = _code_vendor_names("context", _CONTEXT_METHOD_TABLES)
    assert not found, "vendor names in agentmsg.context's code:\n" + "\n".join(found)


def test_native_code_holds_no_vendor_or_protocol_logic() -> None:
    """The C kernels are generic (a JSON writer, an SSE scanner, the reducer's delta loop, a JSON string reader):
    no provider's name or payload key appears in them."""
    vendor = _vendor_words()
    for path in sorted(SDK.glob("*.c")) + sorted(SDK.glob("**/*.h")):
        text = path.read_text(encoding="utf-8")
        assert not vendor.search(text), f"{path.name} names a vendor: {vendor.search(text)}"
        for key in ("content_block_delta", "choices", "candidates", "finish_reason", "usageMetadata"):
            assert key not in text, f"{path.name} reads a provider's payload key {key!r}"
    assert not list(SDK.glob("_csrc")), "provider fast paths in C are gone for good"


def test_the_native_stub_declares_every_kernel_with_its_contract() -> None:
    """``_speedups.pyi`` is complete: every function and class the built module has is declared there, with a
    docstring that states what it gives, when it gives up and who calls it; each class with every method and
    attribute the built class has, each method typed."""
    from agentmsg._native import speedups

    stub = ast.parse((SDK / "_speedups.pyi").read_text(encoding="utf-8"))
    declared = {n.name: ast.get_docstring(n) or "" for n in stub.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    c_source = (SDK / "_speedups.c").read_text(encoding="utf-8")
    table = c_source[c_source.index("static PyMethodDef methods[]") :]
    in_c = {m.group(1) for m in re.finditer(r'^\s*\{"(\w+)",', table[: table.index("};")], re.M)}
    in_c |= set(re.findall(r'PyModule_AddObjectRef\(m, "(\w+)"', c_source))  # (the classes)
    assert in_c == set(declared), f"the stub and _speedups.c's module differ: {in_c ^ set(declared)}"
    if speedups is not None:
        assert {n for n in dir(speedups) if not n.startswith("_")} == set(declared)
    for name, doc in declared.items():
        assert "Caller:" in doc and len(doc) > 200, f"_speedups.pyi: {name} has no stated contract"
    for cls in (n for n in stub.body if isinstance(n, ast.ClassDef)):
        methods = [n for n in cls.body if isinstance(n, ast.FunctionDef)]
        for method in methods:
            args = (method.args.posonlyargs + method.args.args)[1:] + method.args.kwonlyargs
            assert method.returns is not None and all(a.annotation is not None for a in args), (cls.name, method.name)
        if speedups is not None:
            built = {n for n in dir(getattr(speedups, cls.name)) if not n.startswith("_")}
            assert built == {m.name for m in methods if not m.name.startswith("_")}, cls.name


#: providers' own tools (server and built-in tools), as a definition gives one, by the word that names it
OWN_TOOLS: Final[dict[str, dict[str, Any]]] = {
    "bash_2025": {"type": "bash_20250124", "name": "bash"},
    "text_editor_2025": {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"},
    "tool_search_tool": {"type": "tool_search_tool_bm25", "name": "tool_search"},
    "web_search": {"type": "web_search"},
    "file_search": {"type": "file_search", "vector_store_ids": ["vs"]},
    "code_interpreter": {"type": "code_interpreter", "container": {"type": "auto"}},
    "image_generation": {"type": "image_generation"},
    "google_search": {"google_search": {}},
    "googleSearch": {"googleSearch": {}},
    "url_context": {"url_context": {}},
    "code_execution": {"code_execution": {}},
}


def test_only_its_module_names_a_providers_own_tools() -> None:
    """A provider's own tools are declared by its module (its spec's ``own_tools``), which recognizes each; the
    shared request and response machinery and agentmsg.context name none of them (a new provider's own tools are
    one module's, not an edit there)."""
    owned = {p.spec.name: p.spec.own_tools for p in providers.providers() if p.spec.own_tools is not None}
    for word, tool in OWN_TOOLS.items():
        owners = [name for name, own in owned.items() if own.recognize(tool) is not None]
        assert len(owners) == 1, f"{word}: {tool} is recognized by {owners}, not by one provider's spec"
    named = re.compile("|".join(OWN_TOOLS))
    found = [
        f"{path.relative_to(SDK)}:{n}: {line.strip()}"
        for package in ("providers/_request", "providers/_response", "context")
        for path in sorted((SDK / package).rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if named.search(line)
    ]
    assert not found, "a provider's own tools named outside its module:\n" + "\n".join(found)


def test_the_stream_parser_takes_the_sse_decoder_by_its_idle_scan_contract() -> None:
    """The stream parser makes an idle SSE decoder's scan itself (a Python frame less per chunk). It did so by
    reading the decoder's private state (``_idle``, ``_id``, ``_dataless``, ``_scan_on``, ``_bytes_data``) and the
    SSE module's ``_scan``; now by the names SSEDecoder's docstring gives for it (tests/wire/test_sse.py holds
    them to ``feed``). No private name of the decoder or of its module is read there."""
    tree = ast.parse((SDK / "providers" / "_response" / "parser.py").read_text(encoding="utf-8"))

    def is_decoder(node: ast.expr) -> bool:  # self._dec, or a name bound to it or to a framer's sse_decoder()
        return (isinstance(node, ast.Attribute) and node.attr == "_dec") or (
            isinstance(node, ast.Name) and node.id in decoders
        )

    decoders: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            func = value.func if isinstance(value, ast.Call) else None
            if is_decoder(value) or (isinstance(func, ast.Attribute) and func.attr == "sse_decoder"):
                decoders.add(node.targets[0].id)
    assert decoders, "the parser binds no SSE decoder: the check looks at nothing"
    private = sorted(
        f"{node.lineno}: .{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and is_decoder(node.value)
    )
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("agentmsg._wire.sse", "agentmsg._wire"):
            private += [f"{node.lineno}: {a.name}" for a in node.names if a.name.startswith("_") or a.name == "sse"]
    assert not private, f"the stream parser reads the SSE decoder's insides: {private}"
