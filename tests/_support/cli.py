"""The ``agentmsg`` command run as users run it: ``python -m agentmsg ARGS`` in a process of its own.

:func:`run` gives what ``subprocess.run([sys.executable, "-m", "agentmsg", *args], capture_output=True,
text=True, timeout=120)`` gives (stdin ``/dev/null`` unless ``stdin`` is given), without paying a fresh
interpreter's start and ``import agentmsg`` each time: the command runs in a child forked from a *zygote*, an
interpreter started once per test process (``_cli_zygote.py``) that has imported agentmsg and the command modules.
The child is a real process: its 0/1/2 are pipes, it runs ``agentmsg/__main__.py`` as ``-m`` does, in the test's
current directory and environment, and exits (flush and all) as a fresh interpreter does; its exit status (minus the
signal that ended it), stdout and stderr (decoded as ``text=True`` decodes them, ``\\r\\n`` read as ``\\n``) make the
``CompletedProcess``. ``tests/cli/test_runner.py`` compares it with a fresh process.

What an interpreter reads once, at its start, cannot change in a forked child: a zygote serves the runs of one
value of ``AGENTMSG_PURE_PYTHON`` (read when agentmsg is imported) and of the ``PYTHON*``, ``LC_*`` and ``LANG*``
variables (the interpreter's, and its stdio's encoding), started with them (at most :data:`MAX_ZYGOTES`). The
commands that count tokens (:data:`TOKENIZING`: ``count``, ``trim``) have zygotes of their own, which have loaded
every vocabulary too, as a fresh interpreter loads the one it needs (1-2 s a run otherwise). A run is
a fresh process when the zygote cannot start, dies, or said anything as it started (a fresh process would say it
too), or is busy (a run from another thread). ``AGENTMSG_TEST_CLI_FRESH=1`` makes every run a fresh process.
"""

from __future__ import annotations

import atexit
import json
import locale
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

TIMEOUT = 120.0
START_TIMEOUT = 120.0  # (the zygote's, apart: a test may shorten TIMEOUT)
#: read by agentmsg when it is imported (``agentmsg/_native.py``): each value has its zygote, as have the
#: interpreter's own variables (:func:`_startup`)
AT_IMPORT = "AGENTMSG_PURE_PYTHON"
MAX_ZYGOTES = 5  # (then a run in another environment is a fresh process)
#: the commands whose runs a zygote that has loaded the tokenizers' vocabularies serves (``_cli_zygote.WARM``)
TOKENIZING = frozenset({"count", "trim"})
_SOURCE = (Path(__file__).parent / "_cli_zygote.py").read_text("utf-8")
_MAX_REQUEST = 1 << 20


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentmsg", *args]


def run(
    *args: str,
    stdin: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    errors: str = "strict",
    stdout: IO[Any] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m agentmsg ARGS`` with ``stdin`` as its input (``/dev/null`` when None), in ``cwd`` (the current
    directory when None): its exit status, stdout and stderr (text, decoded with ``errors`` as
    ``subprocess.run(errors=...)`` decodes them). Given ``stdout`` (an open file: ``/dev/full``), the command writes
    its output there, as ``subprocess.run(stdout=file)`` makes it, and the result's ``stdout`` is None."""
    where = os.fspath(cwd) if cwd is not None else None
    if not os.environ.get("AGENTMSG_TEST_CLI_FRESH"):
        done = _forked(list(args), stdin, where, errors, stdout)
        if done is not None:
            return done
    return fresh(*args, stdin=stdin, cwd=where, errors=errors, stdout=stdout)


def fresh(
    *args: str, stdin: str | None = None, cwd: str | None = None, errors: str = "strict", stdout: IO[Any] | None = None
) -> subprocess.CompletedProcess[str]:
    """The same run in a fresh interpreter."""
    return subprocess.run(
        command(*args),
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        stdout=subprocess.PIPE if stdout is None else stdout,
        stderr=subprocess.PIPE,
        text=True,
        errors=errors,
        timeout=TIMEOUT,
        cwd=cwd,
    )


def _startup(env: dict[str, str]) -> dict[str, str]:
    """The variables an interpreter reads at its start (its own, and the locale its stdio encoding comes from)."""
    return {k: v for k, v in env.items() if k.startswith(("PYTHON", "LC_", "LANG"))}


def _encoding() -> str:
    """The encoding of ``subprocess.run(text=True)``."""
    if sys.flags.utf8_mode:
        return "utf-8"
    getencoding = getattr(locale, "getencoding", None)  # (3.11+; 3.10's subprocess used the preferred one)
    return str(getencoding()) if getencoding is not None else locale.getpreferredencoding(False)


class _Broken(Exception):
    """The zygote failed (it could not start, it died, it said something else): the run is made afresh."""


def _key(env: dict[str, str], args: list[str]) -> tuple[object, ...]:
    """The zygote a run of ``args`` in ``env`` is served by: the variables read at the start, and for a command
    that counts tokens (:data:`TOKENIZING`), ``"tokenizers"`` last."""
    key = (env.get(AT_IMPORT), *sorted(_startup(env).items()))
    return (*key, "tokenizers") if args[:1] and args[0] in TOKENIZING else key


class _Zygote:
    def __init__(self, env: dict[str, str], tokenizers: bool = False) -> None:
        self.lock = threading.Lock()
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _SOURCE, str(theirs.fileno()), *(["tokenizers"] if tokenizers else [])],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
            )
        finally:
            theirs.close()
        try:
            if self._receive(time.monotonic() + START_TIMEOUT) != {"ready": True}:
                raise _Broken("no ready")
            for end in (self.proc.stdout, self.proc.stderr):  # what its start said, a fresh process would say
                assert end is not None
                os.set_blocking(end.fileno(), False)
                if end.read():
                    raise _Broken("the zygote's start wrote to its stdout or stderr")
        except BaseException:
            self.close()
            raise
        finally:
            for end in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                if end is not None:
                    end.close()  # its 0/1/2 stay pipes (as its children's are); it reads and writes none of them

    def _receive(self, deadline: float) -> dict[str, Any]:
        self.sock.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            data = self.sock.recv(4096)
        except OSError as exc:
            raise _Broken(str(exc)) from exc
        if not data:
            raise _Broken("the zygote ended")
        said = json.loads(data)
        if not isinstance(said, dict):
            raise _Broken(repr(said))
        return said

    def close(self) -> None:
        self.sock.close()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def run(
        self,
        args: list[str],
        stdin: str | None,
        cwd: str,
        env: dict[str, str],
        errors: str = "strict",
        stdout: IO[Any] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        encoding = _encoding()
        payload = json.dumps({"args": args, "cwd": cwd, "env": env}).encode()
        if len(payload) > _MAX_REQUEST // 2:
            raise _Broken("request too long")
        data = stdin.encode(encoding, errors) if stdin is not None else None
        out_r, out_w = os.pipe() if stdout is None else (-1, os.dup(stdout.fileno()))
        err_r, err_w = os.pipe()
        if data is None:
            in_r, in_w = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC), -1
        else:
            in_r, in_w = os.pipe()
        try:
            socket.send_fds(self.sock, [payload], [in_r, out_w, err_w])
        except OSError as exc:
            for fd in (in_w, out_r, err_r):
                if fd >= 0:
                    os.close(fd)
            raise _Broken(str(exc)) from exc
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        deadline = time.monotonic() + TIMEOUT
        try:
            pid = self._receive(deadline).get("pid")
            if not isinstance(pid, int):
                raise _Broken(f"pid {pid!r}")
        except BaseException:
            for fd in (in_w, out_r, err_r):
                if fd >= 0:
                    os.close(fd)
            raise
        chunks: dict[int, list[bytes]] = {fd: [] for fd in (out_r, err_r) if fd >= 0}
        timed_out = _communicate(in_w, data or b"", chunks, deadline)
        if timed_out:
            os.kill(pid, signal.SIGKILL)
        status = self._receive(time.monotonic() + START_TIMEOUT).get("status")
        if not isinstance(status, int):
            raise _Broken(f"status {status!r}")
        out = b"".join(chunks[out_r]) if out_r >= 0 else None  # (None: it went to the file given)
        err = b"".join(chunks[err_r])
        if timed_out:
            raise subprocess.TimeoutExpired(command(*args), TIMEOUT, out, err)
        text = None if out is None else _text(out, encoding, errors)
        return subprocess.CompletedProcess(command(*args), status, text, _text(err, encoding, errors))


def _text(data: bytes, encoding: str, errors: str = "strict") -> str:
    """As ``subprocess.run(text=True, errors=errors)`` reads an output (``Popen._translate_newlines``)."""
    return data.decode(encoding, errors).replace("\r\n", "\n").replace("\r", "\n")


def _communicate(in_w: int, data: bytes, chunks: dict[int, list[bytes]], deadline: float) -> bool:
    """Write ``data`` to ``in_w`` (then close it) while reading each of ``chunks``' descriptors to its end, as
    ``Popen.communicate`` does; closes them all. True when the deadline came first."""
    with selectors.DefaultSelector() as selector:
        if in_w >= 0:
            if data:
                os.set_blocking(in_w, False)
                selector.register(in_w, selectors.EVENT_WRITE)
            else:
                os.close(in_w)
        for fd in chunks:
            selector.register(fd, selectors.EVENT_READ)
        offset = 0
        try:
            while selector.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    return True
                for key, _events in selector.select(left):
                    fd = key.fd
                    if fd == in_w:
                        try:
                            offset += os.write(in_w, data[offset : offset + 65536])
                        except BlockingIOError:
                            continue
                        except BrokenPipeError:  # the command exited without reading it all (as communicate)
                            offset = len(data)
                        if offset >= len(data):
                            selector.unregister(in_w)
                            os.close(in_w)
                        continue
                    chunk = os.read(fd, 65536)
                    if chunk:
                        chunks[fd].append(chunk)
                    else:
                        selector.unregister(fd)
                        os.close(fd)
            return False
        finally:
            for key in list(selector.get_map().values()):
                os.close(key.fd)


_zygotes: dict[tuple[object, ...], _Zygote | None] = {}
_owner = os.getpid()
_starting = threading.Lock()


def _forked(
    args: list[str], stdin: str | None, cwd: str | None, errors: str = "strict", stdout: IO[Any] | None = None
) -> subprocess.CompletedProcess[str] | None:
    """The run in a child of the zygote for this environment, or None when it is to be a fresh process."""
    global _owner
    if os.getpid() != _owner:  # a fork of the test process: the zygotes (their sockets) are the parent's
        _zygotes.clear()
        _owner = os.getpid()
    env = dict(os.environ)
    try:
        where = cwd if cwd is not None else os.getcwd()
    except OSError:  # (a removed directory: as Popen says it)
        return None
    if not os.path.isdir(where):
        return None
    key = _key(env, args)
    with _starting:
        if key not in _zygotes:
            if len(_zygotes) >= MAX_ZYGOTES:
                return None
            try:
                _zygotes[key] = _Zygote(env, tokenizers=key[-1] == "tokenizers")
            except (_Broken, OSError, ValueError):
                _zygotes[key] = None  # this test process runs afresh
        zygote = _zygotes[key]
    if zygote is None or not zygote.lock.acquire(blocking=False):
        return None
    try:
        return zygote.run(args, stdin, where, env, errors, stdout)
    except (_Broken, OSError, ValueError):
        _zygotes.pop(key, None)  # (the next run starts another)
        zygote.close()
        return None
    except subprocess.TimeoutExpired:  # (the child was killed and reaped: the zygote is in step)
        raise
    except BaseException:  # interrupted mid-run (a timeout, ^C): what it says next is no longer in step
        _zygotes.pop(key, None)
        zygote.close()
        raise
    finally:
        zygote.lock.release()


@atexit.register
def _close_all() -> None:
    if os.getpid() == _owner:
        for zygote in _zygotes.values():
            if zygote is not None:
                zygote.close()
        _zygotes.clear()
