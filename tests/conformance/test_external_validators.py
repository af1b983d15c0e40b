"""The schemas in the hands of tools that know nothing of agentmsg (issue 29): the ``$id`` tree of ``agentmsg
schema --out`` behind a plain static server, check-jsonschema (PyPI) and ajv-cli in its default strict mode
(npm) each give agentmsg's verdict on every schema vector, role rules included (they are written in the
schemas). The third language, Java's networknt validator, runs in the AgentScope Java harness
(test_java.py). A test skips only when its tool is not installed, and says which and how to get it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.request
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
from referencing import Registry, Resource

import agentmsg
from tests._support.cli import run
from tests.conftest import ROOT, VECTORS, load_vectors

pytestmark = pytest.mark.oracle  # independent implementations of JSON Schema decide

TS_MODULES = ROOT / "tests" / "typescript" / "node_modules"


def _vector_files() -> list[dict[str, Any]]:
    return [load_vectors(p.name) for p in sorted(VECTORS.glob("*.json"))]


def _message(**more: Any) -> dict[str, Any]:
    return {"id": "m1", "role": "USER", "content": [{"type": "text", "text": "hi"}], **more}


#: Instances beside the vectors, with agentmsg's verdict, that the tools of this module (ECMA-262 patterns) must
#: give too: strings a pattern ending in ``$`` checks, with a line break after their end. Python's ``re`` (and
#: Java's) match ``$`` before a final line break; ECMA-262's does not. (python-jsonschema, whose ``pattern`` is
#: Python's ``re``, accepts them: README, "Other validators".) check-jsonschema
#: checks patterns as ECMA-262 does, unless a schema embedded in the bundle names its dialect (``$schema``):
#: python-jsonschema then checked it with its own validator class, and Python's ``re``.
EDGES = {
    "msg": [
        ("edge-timestamp-line-break-after", _message(timestamp="2025-01-01 12:00:00.000\n")),
        (
            "edge-base64-line-break-after",
            _message(
                content=[{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA\n"}}]
            ),
        ),
    ]
}


def _write_instances(folder: Path) -> dict[str, dict[Path, tuple[str, bool, bool]]]:
    """Every case's instance as a file of its own, by kind: path -> (case id, agentmsg's verdict, its verdict
    with ``strict=True``: the closed variant, unknown keys rejected); and the :data:`EDGES`."""
    out: dict[str, dict[Path, tuple[str, bool, bool]]] = {}
    for doc in _vector_files():
        kind = doc["kind"]
        (folder / kind).mkdir(parents=True)
        for i, case in enumerate(doc["cases"]):
            path = folder / kind / f"{i:03d}.json"
            path.write_text(json.dumps(case["instance"]), encoding="utf-8")
            verdict = agentmsg.is_valid(case["instance"], kind)
            assert verdict is case["valid"], (kind, case["id"])
            strict = agentmsg.is_valid(case["instance"], kind, strict=True)
            out.setdefault(kind, {})[path] = (case["id"], verdict, strict)
    for kind, edges in EDGES.items():
        for i, (case_id, instance) in enumerate(edges):
            path = folder / kind / f"edge-{i:03d}.json"
            path.write_text(json.dumps(instance), encoding="utf-8")
            out[kind][path] = (
                case_id,
                agentmsg.is_valid(instance, kind),
                agentmsg.is_valid(instance, kind, strict=True),
            )
    assert [out["msg"][folder / "msg" / f"edge-{i:03d}.json"][1] for i in range(2)] == [False, False]
    assert any(not v for files in out.values() for _, v, _ in files.values())
    assert any(v and not s for files in out.values() for _, v, s in files.values())
    return out


def _bundle(folder: Path, kind: str, strict: bool = False) -> Path:
    r = run("schema", kind, "--bundle", *(["--strict"] if strict else []))
    assert r.returncode == 0, r.stderr
    path = folder / f"{kind}{'.strict' if strict else ''}.bundle.json"
    path.write_text(r.stdout, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def instances(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[Path, tuple[str, bool, bool]]]:
    """Every case's instance as a file (``_write_instances``), written once for the tools of this module."""
    return _write_instances(tmp_path_factory.mktemp("cases"))


@pytest.fixture(scope="module")
def bundles(
    tmp_path_factory: pytest.TempPathFactory, instances: dict[str, dict[Path, tuple[str, bool, bool]]]
) -> dict[tuple[str, bool], Path]:
    """The bundle of each kind with vectors, open and closed (``agentmsg schema KIND --bundle [--strict]``, one
    command each), by (kind, strict): made once for the tools of this module (each command is a new interpreter)."""
    folder = tmp_path_factory.mktemp("bundles")
    return {(kind, strict): _bundle(folder, kind, strict) for kind in instances for strict in (False, True)}


@pytest.fixture
def static_server(tmp_path: Path) -> Iterator[tuple[Path, str, list[str]]]:
    """A plain static HTTP server (the standard library's) rooted at a fresh folder: (folder, base URL, the
    paths it was asked for)."""
    root = tmp_path / "site"
    root.mkdir()
    asked: list[str] = []

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            asked.append(self.path)

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_schema_out_writes_the_id_tree_a_static_server_resolves(
    tmp_path: Path, static_server: tuple[Path, str, list[str]]
) -> None:
    """``agentmsg schema --out DIR`` writes every schema and every bundle at the path of its ``$id``; a plain
    static server rooted at DIR, standing in for the ``$id``s' host, answers every ``$ref``: python-jsonschema,
    fetching each schema from it by URL (nothing given to it by hand), gives agentmsg's verdict on every
    vector, from the schemas and from the bundles."""
    root, base, asked = static_server
    r = run("schema", "--out", str(root))
    assert r.returncode == 0, r.stderr
    written = sorted(Path(line) for line in r.stdout.splitlines())
    docs = agentmsg.schema_documents()
    assert len(written) == len(docs) + len(agentmsg.KINDS)  # every schema, and a bundle per kind
    host = None
    for path in written:
        doc = json.loads(path.read_text(encoding="utf-8"))
        parts = urlsplit(doc["$id"])
        host = host or f"{parts.scheme}://{parts.netloc}"
        assert path == root / parts.path.lstrip("/"), doc["$id"]
    for doc in docs.values():
        assert json.loads((root / urlsplit(doc["$id"]).path.lstrip("/")).read_text(encoding="utf-8")) == doc
    assert host is not None

    fetched: dict[str, Resource[Any]] = {}

    def retrieve(uri: str, retrieved: dict[str, Resource[Any]]) -> Resource[Any]:
        # Each schema is fetched from the server once: each registry below retrieves it again, and the server
        # answers the same.
        assert uri.startswith(host + "/"), uri  # every $ref is under the $ids' host
        if uri not in fetched:
            with urllib.request.urlopen(base + uri[len(host) :], timeout=30) as response:
                fetched[uri] = Resource.from_contents(json.load(response))
        retrieved[uri] = fetched[uri]
        return fetched[uri]

    def validator(registry: Registry[Any], schema_id: str) -> jsonschema.Draft202012Validator:
        return jsonschema.Draft202012Validator(
            {"$ref": schema_id}, registry=registry, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
        )

    checks = 0
    for doc in _vector_files():
        bundle_id = f"{doc['schema'].rsplit('/', 1)[0]}/bundle/{doc['schema'].rsplit('/', 1)[1]}"
        for schema_id in (doc["schema"], bundle_id):
            # Each schema and bundle from a registry of its own, empty but for what its $refs retrieved. A validator
            # starts every instance from its registry: what the instances before retrieved was retrieved and crawled
            # (with every schema retrieved with it) again, 2,261 crawls, most of this test's time. The registry now
            # keeps what they retrieved, crawled once, as a resolver keeps it for the rest of one instance.
            retrieved: dict[str, Resource[Any]] = {}
            registry: Registry[Any] = Registry(retrieve=partial(retrieve, retrieved=retrieved))  # type: ignore[call-arg]
            check = validator(registry, schema_id)
            for case in doc["cases"]:
                if retrieved:  # what the instance before retrieved
                    registry = registry.with_resources(retrieved.items()).crawl()
                    retrieved.clear()
                    check = validator(registry, schema_id)
                assert check.is_valid(case["instance"]) is agentmsg.is_valid(case["instance"], doc["kind"]), (
                    schema_id,
                    case["id"],
                )
                checks += 1
    assert checks == 2 * sum(len(d["cases"]) for d in _vector_files())
    assert {urlsplit(d["$id"]).path for d in docs.values()} <= set(asked)  # each fetched from the server
    r = run("schema", "msg", "--out", str(tmp_path / "other"))
    assert r.returncode == 2 and "--out" in r.stderr


def test_check_jsonschema_gives_agentmsgs_verdict_on_every_vector(
    instances: dict[str, dict[Path, tuple[str, bool, bool]]], bundles: dict[tuple[str, bool], Path]
) -> None:
    """check-jsonschema (PyPI; python-jsonschema with its own format checks), given each kind's bundle
    (``agentmsg schema KIND --bundle``) and every case as a file, accepts exactly the cases agentmsg
    accepts; given the closed bundle (``--bundle --strict``), exactly those ``strict=True`` accepts."""
    tool = Path(sys.executable).parent / "check-jsonschema"
    found = str(tool) if tool.exists() else shutil.which("check-jsonschema")
    if found is None:
        pytest.skip("check-jsonschema is not installed (it is in agentmsg[test]: pip install check-jsonschema)")
    agreed = 0
    for kind, files in instances.items():
        for strict in (False, True):
            bundle = bundles[kind, strict]
            r = subprocess.run(
                [found, "--schemafile", str(bundle), "-o", "json", "-v", *map(str, files)],
                capture_output=True,
                text=True,
                timeout=240,
            )
            assert r.returncode in (0, 1), r.stderr
            report = json.loads(r.stdout)
            assert report["parse_errors"] == [], report["parse_errors"]
            accepted = {Path(p) for p in report["successes"]}
            rejected = {Path(e["filename"]) for e in report["errors"]}
            assert accepted | rejected == set(files) and not accepted & rejected
            for path, (case_id, verdict, strict_verdict) in files.items():
                errors = [e for e in report["errors"] if Path(e["filename"]) == path]
                assert (path in accepted) is (strict_verdict if strict else verdict), (kind, strict, case_id, errors)
                agreed += 1
    assert agreed == 2 * (sum(len(d["cases"]) for d in _vector_files()) + sum(map(len, EDGES.values())))


def _ajv(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """ajv-cli, its output (stdout and stderr, in order) through a file: it ends with process.exit(), which can
    drop what it wrote to a pipe and the reader had not taken yet (lines were lost that way)."""
    with tempfile.TemporaryFile("w+", encoding="utf-8") as log:
        r = subprocess.run(
            ["node", str(TS_MODULES / "ajv-cli" / "dist" / "index.js"), "validate", "--spec=draft2020", *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=240,
            cwd=cwd,
        )
        log.seek(0)
        return subprocess.CompletedProcess(r.args, r.returncode, log.read(), "")


def test_ajv_cli_in_strict_mode_gives_agentmsgs_verdict_on_every_vector(
    instances: dict[str, dict[Path, tuple[str, bool, bool]]], bundles: dict[tuple[str, bool], Path]
) -> None:
    """ajv-cli (npm) in ajv's default strict mode refuses the bundles as they are ('strict mode: unknown keyword:
    "x-rule"'); told of agentmsg's extension keywords by @agentmsg/schema's ajv-keywords module (``-c
    @agentmsg/schema/ajv-keywords``), with ajv-formats for ``date-time``, it compiles every bundle and accepts
    exactly the cases agentmsg accepts; the closed bundles (``--bundle --strict``) exactly those ``strict=True``
    accepts."""
    missing = [m for m in ("ajv-cli", "ajv-formats", "@agentmsg/schema") if not (TS_MODULES / m).is_dir()]
    if shutil.which("node") is None or missing:
        pytest.skip(f"node or tests/typescript/node_modules ({', '.join(missing)}) not installed: make ts-deps")
    agreed = 0
    for kind, files in instances.items():
        for strict in (False, True):
            bundle = bundles[kind, strict]
            first = str(next(iter(files)))
            r = _ajv("-c", "ajv-formats", "-s", str(bundle), "-d", first, cwd=TS_MODULES.parent)
            assert r.returncode == 1 and 'strict mode: unknown keyword: "x-' in r.stdout, r.stdout
            keywords = ("-c", "ajv-formats", "-c", "@agentmsg/schema/ajv-keywords")
            data = [a for path in files for a in ("-d", str(path))]
            r = _ajv(*keywords, "-s", str(bundle), "--errors=line", *data, cwd=TS_MODULES.parent)
            assert r.returncode in (0, 1) and "strict mode" not in r.stdout, r.stdout[-2000:]
            said: dict[Path, bool] = {}
            for line in r.stdout.splitlines():
                name, _, word = line.rpartition(" ")
                if word in ("valid", "invalid") and Path(name) in files:
                    said[Path(name)] = word == "valid"
            assert set(said) == set(files), r.stdout[-2000:]
            for path, (case_id, verdict, strict_verdict) in files.items():
                assert said[path] is (strict_verdict if strict else verdict), (kind, strict, case_id)
                agreed += 1
    assert agreed == 2 * (sum(len(d["cases"]) for d in _vector_files()) + sum(map(len, EDGES.values())))
