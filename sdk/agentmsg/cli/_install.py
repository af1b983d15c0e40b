"""The command that adds an extra to this agentmsg, for hints ("serve needs the web extra: ..."), or a package an
extra of its own installs ("count exactly: ...").

agentmsg is not on any package index, so ``pip install 'agentmsg[web]'`` finds nothing (or someone else's
package). What works is installing again from where this copy came from, with the extra: pip records that
place (PEP 610, ``direct_url.json``) for a wheel or sdist file, a directory (editable or not) and a git URL.
"""

from __future__ import annotations

import json
import re
import shlex
from importlib import metadata
from typing import Any
from urllib.parse import unquote, urlsplit

README = "README.md, 'Install it in your project'"


def _direct_url() -> dict[str, Any] | None:
    # Every agentmsg on the path, not the first: a source tree's build leaves an ``agentmsg.egg-info`` (no
    # direct_url.json) that shadows the installed one when the current folder is that tree.
    text = next(
        (t for d in metadata.distributions(name="agentmsg") if (t := d.read_text("direct_url.json"))),
        None,
    )
    try:
        value = json.loads(text) if text else None
    except ValueError:
        return None
    return value if isinstance(value, dict) and isinstance(value.get("url"), str) else None


def install_command(extra: str, direct_url: dict[str, Any] | None = None) -> str:
    """``pip install ...`` that installs agentmsg with ``extra`` from where this copy was installed from;
    ``direct_url`` is pip's record of it (read from the installed metadata when not given)."""
    where = direct_url if direct_url is not None else _direct_url()
    if where is not None:
        url: str = where["url"]
        parts = urlsplit(url)
        if "vcs_info" in where:
            vcs = where["vcs_info"]
            pin = vcs.get("requested_revision") or vcs.get("commit_id")
            spec = f"{vcs.get('vcs', 'git')}+{url}" + (f"@{pin}" if pin and "@" not in parts.path else "")
            return "pip install " + shlex.quote(f"agentmsg[{extra}] @ {spec}")
        if parts.scheme == "file":
            path = unquote(parts.path)
            if where.get("dir_info", {}).get("editable"):
                return "pip install -e " + shlex.quote(f"{path}[{extra}]")
            return "pip install " + shlex.quote(f"{path}[{extra}]")
        return "pip install " + shlex.quote(f"agentmsg[{extra}] @ {url}")
    return f"pip install '/path/to/agentmsg/dist/agentmsg-<version>-<tags>.whl[{extra}]' (the wheel you installed; {README})"


#: a requirement of agentmsg's metadata that an extra adds: its name and the extra (``uvicorn>=0.30; extra ==
#: "web"``)
_EXTRA_REQUIREMENT = re.compile(r'([A-Za-z0-9][A-Za-z0-9._-]*)[^;]*;.*\bextra == "([^"]+)"')


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # (PEP 503)


def package_command(package: str) -> str:
    """``pip install ...`` that installs ``package``: :func:`install_command` of the extra that installs it and
    nothing else (pyproject's, read from the installed metadata: the tokenizer package of the ``count`` extra), else the package."""
    try:
        requires = metadata.requires("agentmsg") or []
    except metadata.PackageNotFoundError:
        requires = []
    extras: dict[str, set[str]] = {}
    for requirement in requires:
        found = _EXTRA_REQUIREMENT.fullmatch(requirement)
        if found is not None:
            extras.setdefault(found[2], set()).add(_normalized(found[1]))
    alone = next((extra for extra, names in extras.items() if names == {_normalized(package)}), None)
    return install_command(alone) if alone is not None else "pip install " + shlex.quote(package)
