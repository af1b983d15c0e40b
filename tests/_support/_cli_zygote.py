"""The zygote of ``tests/_support/cli.py``: an interpreter that has imported agentmsg and the command modules once,
then forks a child per request, which runs ``python -m agentmsg ARGS`` as a fresh interpreter would.

Started as ``python -c SOURCE FD [tokenizers]`` (never imported by the tests): FD is its end of a ``SOCK_SEQPACKET``
socket pair; ``tokenizers``: the vocabularies of ``count`` and ``trim`` are loaded too (:data:`WARM`).
It says ``{"ready": true}``, then for each request (JSON: ``args``, ``cwd``, ``env``; with three file descriptors,
the child's stdin, stdout and stderr) it forks, says ``{"pid": N}``, waits for the child and says
``{"status": S}`` (S as ``Popen.returncode``: the exit status, or minus the signal that ended the child). It ends
when the socket is closed. It is single-threaded, so forking it is safe; its own 0/1/2 are pipes, as the child's
will be, so that ``sys.stdin``/``sys.stdout``/``sys.stderr``, made at its start, are what a child on pipes makes.
Its objects are frozen (``gc.freeze``) before each fork, as the gc module's documentation advises for a pre-fork
server: a child's collections, the one at its exit too, then neither walk nor copy them (0.10 s of CPU per run
down to 0.04 s).
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import pkgutil
import runpy
import socket
import sys
import time
from typing import Any

#: imported before the first fork: the package, the command line and every module of it (what its commands import
#: when they run), and the providers. The tokenizers that count and trim load only in a zygote started with
#: ``tokenizers`` (``tests/_support/cli.py`` starts one for those two commands): loading OpenAI's and Qwen's
#: vocabularies costs each run 1-2 s, and a zygote that holds them is 218 MB instead of 47 MB, whose every child
#: costs 0.086 s of CPU instead of 0.039 s, which the other commands need not pay
WARM = ("agentmsg", "agentmsg.cli", "agentmsg.providers")


def _child(request: dict[str, Any], fds: list[int], started_in: str) -> None:
    """In the forked child: the request's descriptors as 0/1/2, its directory, environment and arguments, then
    ``agentmsg/__main__.py`` run as ``-m`` runs it. Its ``SystemExit`` ends the interpreter, which flushes and
    reports as a fresh one does."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    if sys.path and sys.path[0] == started_in:  # -m puts the directory it starts in first
        sys.path[0] = os.getcwd()
    os.environ.clear()
    os.environ.update(request["env"])
    time.tzset()  # (the time module, imported, read TZ as the zygote started)
    sys.argv = ["-m", *request["args"]]
    runpy.run_module("agentmsg", run_name="__main__", alter_sys=True)


def serve(sock: socket.socket, tokenizers: bool = False) -> None:
    started_in = os.getcwd()
    # -c puts '' first in sys.path, -m the directory it starts in (neither with -P)
    if sys.path and sys.path[0] == "" and not getattr(sys.flags, "safe_path", False):
        sys.path[0] = started_in
    for name in WARM:
        importlib.import_module(name)
    import agentmsg
    import agentmsg.cli

    for name in agentmsg.__all__:  # (`import agentmsg` imports each public name's module on its first use)
        getattr(agentmsg, name)

    for module in pkgutil.iter_modules(agentmsg.cli.__path__, "agentmsg.cli."):  # (each command's module)
        importlib.import_module(module.name)
    from agentmsg.providers import NAMES, get

    for provider in NAMES:
        get(provider)
    if tokenizers:  # every vocabulary, loaded as a count in a fresh interpreter loads the one it needs
        from agentmsg.context._tokenizers import PACKAGES, counter

        for vocabulary in PACKAGES:
            counter(vocabulary)
    sock.send(b'{"ready": true}')
    while True:
        try:
            data, fds, _flags, _address = socket.recv_fds(sock, 1 << 20, 3)
        except OSError:
            return
        if not data:
            return
        request = json.loads(data)
        gc.freeze()  # what the zygote made is never garbage: the child's collections (its exit's) skip it
        pid = os.fork()
        if pid == 0:
            sock.close()
            _child(request, fds, started_in)
            raise SystemExit(0)  # (never reached: running agentmsg ends in SystemExit)
        for fd in fds:
            os.close(fd)
        sock.send(json.dumps({"pid": pid}).encode())
        _, status = os.waitpid(pid, 0)
        sock.send(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode())


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])), tokenizers=sys.argv[2:] == ["tokenizers"])
