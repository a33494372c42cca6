"""One registry type for every kind of plug-in: executors, engines, scenarios and models.

A registry holds the plug-ins of one kind by name.  They come from two
places, and only these two:

- the modules of one package (`package`): `names()` and `get()` import each
  module once, and a module registers its plug-in with the `register`
  decorator (or call), so a new plug-in is one file there;
- installed packages' entry points in one group (`group`), read from their
  metadata alone: a name is known (listed, offered as a close match) before
  anything is imported, and `get(NAME)` imports that one entry, whose module
  registers the plug-in (or whose object is the plug-in).  A distribution in
  the working directory is no installed package: its entry points are never
  loaded, and an unknown name it declares says so (core/installed.py).

An unknown name is one UsageError line: close matches, every accepted name
and where a new one comes from (the kind's `hint`).  TensorFlow-free: the
launcher, `prices` and reports read registries without importing it.
Tests add a plug-in for one test with tpubench.testing.registries.added.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Callable, Iterable

from tpubench.core import errors, installed


def _same(a, b) -> bool:
    """Whether A and B are one plug-in (a module imported twice gives a new class of it)."""
    if a is b:
        return True
    named = isinstance(a, type) and isinstance(b, type)
    return named and (a.__module__, a.__qualname__) == (b.__module__, b.__qualname__)


def _package_of(entry) -> str:
    dist = getattr(entry, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else "(unknown)"


class Registry:
    """The plug-ins of one kind, by name.

    Args:
      kind: what a plug-in is, in errors ("--executor", "--scenario", "model").
      package: the dotted package whose modules are the shipped plug-ins (None: none).
      group: the entry-point group installed packages add plug-ins under (None: none).
      make: turns what `register` is given into the stored plug-in (a class into its
        instance, after checking it); the default stores it as given.
      plugin: whether an entry point's loaded object is itself a plug-in to register.
      order: the sort key of `names()` given (name, plug-in); alphabetical by default.
      valid: names a plug-in may have; another is refused before anything is imported.
      listed: names known without importing anything (beyond the modules and entries).
      hint: the end of the unknown-name line, where a new plug-in comes from.
    """

    def __init__(
        self,
        kind: str,
        *,
        package: str | None = None,
        group: str | None = None,
        make: Callable = lambda obj: obj,
        plugin: Callable[[object], bool] = lambda obj: False,
        order: Callable | None = None,
        valid: Callable[[str], bool] | None = None,
        listed: Callable[[], Iterable[str]] = tuple,
        hint: str = "",
    ):
        self.kind = kind
        self.package = package
        self.group = group
        self.hint = hint
        self._make, self._plugin, self._order = make, plugin, order
        self._valid, self._listed = valid, listed
        self._plugins: dict = {}  # name -> the stored plug-in
        self._given: dict = {}  # name -> what register was given (to tell a second one)
        self._imported = False
        self._entries: tuple[dict, list] | None = None

    # Registering.
    def register(self, obj):
        """Adds OBJ (it has a `name`) as a plug-in; returns OBJ, so it decorates a class.

        Raises:
          ValueError: another plug-in already has that name (a programming error).
        """
        name = getattr(obj, "name", None)
        if name in self._given and not _same(self._given[name], obj):
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self._plugins[name] = self._make(obj)
        self._given[name] = obj
        return obj

    def remove(self, name: str) -> None:
        """Takes NAME out again (tpubench.testing.registries.added, after a test)."""
        self._plugins.pop(name, None)
        self._given.pop(name, None)

    def registered(self) -> tuple[str, ...]:
        """The names registered so far, nothing imported (names() finds them all)."""
        return tuple(self._plugins)

    # Finding.
    def modules(self) -> tuple[str, ...]:
        """The package's module names, from the installation's files (nothing imported)."""
        spec = importlib.util.find_spec(self.package) if self.package else None
        where = list(spec.submodule_search_locations or []) if spec else []
        found = (m.name for m in pkgutil.iter_modules(where))
        return tuple(sorted(n for n in found if self._valid is None or self._valid(n)))

    def _import_modules(self) -> None:
        if not self._imported:
            self._imported = True
            for module in self.modules():
                importlib.import_module(f"{self.package}.{module}")

    def entries(self) -> dict:
        """{name: entry point} installed packages declare under the group (metadata only)."""
        if self._entries is None:  # the installed packages do not change while a command runs
            kept, left = installed.entry_points(self.group) if self.group else ([], [])
            found = {}
            for entry in kept:
                if self._valid is None or self._valid(entry.name):
                    found.setdefault(entry.name, entry)
            self._entries = (found, left)
        return self._entries[0]

    def _left_out(self) -> list:
        """[(entry, directory)] of the group's entries in the working directory, not loaded."""
        self.entries()
        return self._entries[1]

    def entry_package(self, name: str) -> str | None:
        """'acme-models 1.2', the installed package whose entry point NAME is; None if none."""
        entry = self.entries().get(name)
        return _package_of(entry) if entry is not None else None

    def _load(self, name: str, entry) -> None:
        """Imports the entry point NAME; its module registers the plug-in, or it is one."""
        where = (
            f"{self.kind} {name!r} of the installed package {_package_of(entry)} "
            f"(entry point {entry.value})"
        )
        try:
            loaded = entry.load()
        except Exception as e:  # noqa: BLE001 - a plug-in's import is its own code: one line
            why = errors.describe(e, 200)
            raise errors.UsageError(f"{where} failed to import: {why}") from None
        if self._plugin(loaded) and getattr(loaded, "name", None) not in self._plugins:
            self.register(loaded)
        if name not in self._plugins:
            raise errors.UsageError(
                f"{where} registered no {self.kind} of that name (its module must register "
                "it, or the entry point name it)"
            )

    def known(self) -> set[str]:
        """Every name known without importing a plug-in: registered, entries, listed."""
        return set(self._plugins) | set(self.entries()) | set(self._listed())

    def names(self) -> tuple[str, ...]:
        """Every plug-in's name (installed packages' entries imported too), in the kind's order."""
        self._import_modules()
        for name, entry in self.entries().items():
            if name not in self._plugins:
                self._load(name, entry)
        if self._order is None:
            return tuple(sorted(self._plugins))
        return tuple(sorted(self._plugins, key=lambda n: self._order(n, self._plugins[n])))

    def get(self, name: str):
        """The plug-in called NAME.

        Raises:
          UsageError: no plug-in has that name (one line listing the accepted ones).
        """
        if self._valid is not None and not self._valid(name):
            raise self.unknown(name, self.known())  # never a plug-in's name: nothing imported
        self._import_modules()
        if name not in self._plugins and name in self.entries():
            self._load(name, self.entries()[name])
        if name not in self._plugins:
            note = installed.left_out_note(name, self._left_out())
            e = self.unknown(name, set(self._plugins) | set(self.entries()))
            raise errors.UsageError(f"{e}{note}") if note else e
        return self._plugins[name]

    def unknown(self, name: str, known: Iterable[str]) -> errors.UsageError:
        """The unknown-name line: close matches, the accepted names, then the kind's hint."""
        return errors.UsageError(f"{errors.unknown(self.kind, name, known)}{self.hint}")

    def help_text(self, default: str | None = None) -> str:
        """'b (default), a or c': every name for a flag's help, the default first."""
        ordered = sorted(self.names(), key=lambda n: n != default)
        shown = [f"{n} (default)" if n == default else n for n in ordered]
        return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + f" or {shown[-1]}"
