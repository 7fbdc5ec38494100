#!/usr/bin/env python3
"""Where pip, as this machine configures it, fetches packages from, and which of those places
answer now. scripts/ray-venv.sh runs it with the venv's python before installing.

pip's configuration is read the way pip reads it for ``pip install``: ``pip config list`` gives
the merged config files (``[global]`` and ``[install]`` sections) and the ``PIP_*`` environment
variables (``:env:``), and later ones win: global < install < environment. The package index is
``index-url`` (pip's default, https://pypi.org/simple, when nothing sets it), then every
``extra-index-url``, then every ``find-links`` location; ``no-index`` leaves only the last.

Each source is checked once: a ``file:`` URL or a path must be a folder; an ``http(s):`` URL must
answer an HTTP request (any status) within PROBE_TIMEOUT seconds (a machine whose configured index
cannot be reached would otherwise make pip retry it for every package, minutes each).

Prints, on stderr, one line per source (``ok`` or why not); on stdout, ``NAME=VALUE`` lines of
``PIP_*`` variables for the install, only when a source must be left out: pip then reads the
remaining sources from them (environment variables replace the config files' values). Exit 1
when no source is left.

Usage: python scripts/pip-sources.py [PYTHON]   (PYTHON: whose pip to ask; default this one)
"""
from __future__ import annotations

import os
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from typing import Dict, List, Optional, Tuple
from urllib.parse import unquote, urlsplit

PYPI = "https://pypi.org/simple"
PROBE_TIMEOUT = 10.0
TRUE = {"1", "true", "yes", "on"}


def pip_config(python: str) -> Dict[str, str]:
    """Effective ``pip install`` settings of ``python``'s pip: ``{key: value}``."""
    out = subprocess.run([python, "-m", "pip", "config", "list"], check=True, capture_output=True, text=True).stdout
    return effective(out)


def effective(listing: str) -> Dict[str, str]:
    """The settings ``pip install`` uses, from ``pip config list`` output (``section.key='value'``
    lines): ``[global]``, then ``[install]``, then the environment (``:env:``), later ones winning."""
    layers: Dict[str, Dict[str, str]] = {"global": {}, "install": {}, ":env:": {}}
    for line in listing.splitlines():
        name, sep, value = line.partition("=")
        section, dot, key = name.rpartition(".")
        if not sep or not dot or section not in layers:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        layers[section][key] = value
    merged: Dict[str, str] = {}
    for section in ("global", "install", ":env:"):
        merged.update(layers[section])
    return merged


def probe(location: str, cafile: Optional[str]) -> Optional[str]:
    """None when the source can be read, else why not."""
    parts = urlsplit(location)
    if parts.scheme in ("http", "https"):
        context = ssl.create_default_context(cafile=cafile) if parts.scheme == "https" else None
        try:
            with urllib.request.urlopen(location.rstrip("/") + "/", timeout=PROBE_TIMEOUT, context=context):
                return None
        except urllib.error.HTTPError:
            return None  # it answers (some indexes have no page at their root)
        except Exception as err:  # DNS, refused, TLS, timeout: pip would fail the same way, slowly
            reason = getattr(err, "reason", err)
            return f"does not answer ({reason})"
    path = unquote(parts.path) if parts.scheme == "file" else location
    return None if os.path.isdir(path) else "no such folder"


def sources(config: Dict[str, str]) -> List[Tuple[str, str, bool]]:
    """``(option, location, is the default)`` in pip's order of use."""
    out: List[Tuple[str, str, bool]] = []
    if config.get("no-index", "").lower() not in TRUE:
        out.append(("index-url", config.get("index-url", PYPI), "index-url" not in config))
        out += [("extra-index-url", url, False) for url in config.get("extra-index-url", "").split()]
    out += [("find-links", url, False) for url in config.get("find-links", "").split()]
    return out


def main() -> int:
    python = sys.argv[1] if len(sys.argv) > 1 else sys.executable
    config = pip_config(python)
    cafile = config.get("cert")
    kept: Dict[str, List[str]] = {"index-url": [], "extra-index-url": [], "find-links": []}
    left_out = 0
    for option, location, default in sources(config):
        why = probe(location, cafile)
        label = f"{option} {location}" + (" (pip's default)" if default else "")
        print(f"pip-sources: {label}: {'ok' if why is None else why}", file=sys.stderr)
        if why is None:
            kept[option].append(location)
        else:
            left_out += 1
    indexes = kept["index-url"] + kept["extra-index-url"]
    if not indexes and not kept["find-links"]:
        print("pip-sources: no package source answers: set PIP_INDEX_URL (or pip config) to an index this machine reaches",
              file=sys.stderr)
        return 1
    if left_out:
        print("pip-sources: this run leaves out the sources that do not answer", file=sys.stderr)
        if indexes:
            print(f"PIP_INDEX_URL={indexes[0]}")
            print(f"PIP_EXTRA_INDEX_URL={' '.join(indexes[1:])}")
        else:
            print("PIP_NO_INDEX=1")
        print(f"PIP_FIND_LINKS={' '.join(kept['find-links'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
