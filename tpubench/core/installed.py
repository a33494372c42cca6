"""Plug-ins come only from the installation, never from the working directory.

Installed packages add models (`tpubench.models`) and launcher executors and
engines (`tpubench_launch.executors`, `tpubench_launch.engines`) through entry
points, which Python finds in the metadata of every distribution on
`sys.path`.  The working directory is on `sys.path` whenever Python was
started with `-c` or `-m` and without `-P`, so a downloaded results folder
holding `evil-1.0.dist-info/entry_points.txt` beside `evil.py` would declare
a plug-in, and importing it would run that file.  So a distribution found in
the working directory (or through a relative `sys.path` entry, which is the
working directory by another name) is left out: its entry points are never
loaded, and the caller can say why a name it declares is not offered.  The
installation is everything else on `sys.path`: site-packages, the user's
site, and PYTHONPATH as the user set it.  (docs/security.md, "Code only from
the installation".)
"""

from __future__ import annotations

import importlib.metadata
import os

from tpubench.core import safe_text

MODELS = "tpubench.models"  # the entry-point group installed packages register models under


def _base(entry) -> str | None:
    """The directory ENTRY's distribution was found in (None: unknown)."""
    dist = getattr(entry, "dist", None)
    if dist is None:
        return None
    try:
        return str(dist.locate_file(""))
    except (AttributeError, NotImplementedError, TypeError):
        return None


def outside(entry) -> str | None:
    """Where ENTRY's distribution lies when that is the working directory, else None."""
    base = _base(entry)
    if base is None:
        return None
    here = os.path.realpath(os.getcwd())
    if not os.path.isabs(base) or os.path.realpath(base) == here:
        return here
    return None


def entry_points(group: str) -> tuple[list, list[tuple[object, str]]]:
    """GROUP's entry points: (those of the installation, [(entry, directory)] of those left
    out because their distribution lies in the working directory)."""
    kept, left = [], []
    for entry in importlib.metadata.entry_points(group=group):
        where = outside(entry)
        if where is None:
            kept.append(entry)
        else:
            left.append((entry, where))
    return kept, left


def model_names() -> set[str]:
    """The model names installed packages declare under MODELS (metadata only, no import)."""
    return {entry.name for entry in entry_points(MODELS)[0]}


def left_out_note(name: str, left: list[tuple[object, str]]) -> str:
    """'' or '; a package in the working directory (DIR) declares NAME: ...' for an error."""
    for entry, where in left:
        if entry.name == name:
            dist = getattr(entry, "dist", None)
            what = f"{dist.name} {dist.version}" if dist is not None else "a package"
            return (
                f"; {safe_text.shown(what)} in the working directory ({safe_text.shown(where)}) "
                "declares it, and plug-ins load only from the installation: install it (pip "
                "install) to use it"
            )
    return ""
