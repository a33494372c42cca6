"""A registry of plug-ins found by module: executors/ and engines/ each keep one.

Each module of the package defines a class decorated with the registry's
`register`; `names()` imports every module of the package once, so a new
plug-in is one file there and every list of names (flag choices, help,
errors, `tpubench-launch executors`, the smoke layer's commands) sees it.
An installed package adds one the Python way, without touching this tree:
an entry point in the group named after the package
(`[project.entry-points."tpubench_launch.executors"]`, `NAME = module` or
`NAME = module:Class`), whose module registers its class (or which names it).
A distribution in the working directory is no installed package: its entry
points are never loaded (tpubench/core/installed.py).
"""

from __future__ import annotations

import importlib
import pkgutil

from tpubench.core import installed
from tpubench_launch import errors


class Registry:
    """Plug-ins of one kind, by name, from the modules of package PACKAGE."""

    def __init__(self, package: str, path, flag: str):
        self._package = package
        self._path = path
        self._flag = flag  # the flag whose values these are, for errors
        self._found: dict = {}
        self._discovered = False

    def register(self, cls):
        """Class decorator: CLS (with a `name`) becomes a value of the flag."""
        self._found[cls.name] = cls()
        return cls

    def names(self) -> tuple[str, ...]:
        """Every registered name, alphabetical."""
        if not self._discovered:
            self._discovered = True
            for module in pkgutil.iter_modules(self._path):
                importlib.import_module(f"{self._package}.{module.name}")
            for entry in installed.entry_points(self._package)[0]:
                if entry.name not in self._found:
                    self._load(entry)
        return tuple(sorted(self._found))

    def _load(self, entry) -> None:
        """Imports an installed package's plug-in ENTRY; its module registers the class."""
        try:
            loaded = entry.load()
        except Exception as e:  # noqa: BLE001 - a plug-in's import is its own code: one line
            raise errors.UsageError(
                f"{self._flag} plug-in {entry.name!r} (entry point {entry.value}) failed to "
                f"import: {type(e).__name__}: {e}"
            ) from None
        if isinstance(loaded, type) and getattr(loaded, "name", None) not in self._found:
            self.register(loaded)

    def get(self, name: str):
        """The plug-in called NAME.

        Raises:
          UsageError: no plug-in has that name (the error lists the accepted ones).
        """
        known = self.names()
        if name not in known:
            e = errors.unknown(self._flag, name, known)
            note = installed.left_out_note(name, installed.entry_points(self._package)[1])
            raise errors.UsageError(f"{e}{note}") if note else e
        return self._found[name]

    def help_text(self, default: str | None = None) -> str:
        """'b (default), a or c': every name for a flag's help, the default first."""
        ordered = sorted(self.names(), key=lambda n: n != default)
        shown = [f"{n} (default)" if n == default else n for n in ordered]
        return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + f" or {shown[-1]}"
