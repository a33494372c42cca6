"""The launcher's plug-in kinds: executors/ and engines/ each keep one registry of classes.

Each module of the package defines a class decorated with the registry's
`register`; `names()` imports every module of the package once, so a new
plug-in is one file there and every list of names (flag choices, help,
errors, `tpubench-launch executors`, the smoke layer's commands) sees it.
An installed package adds one the Python way, without touching this tree:
an entry point in the group named after the package
(`[project.entry-points."tpubench_launch.executors"]`, `NAME = module` or
`NAME = module:Class`), whose module registers its class (or which names it).
A distribution in the working directory is no installed package: its entry
points are never loaded (tpubench/core/installed.py).  The registry itself
is tpubench's one type (tpubench/core/registry.py).
"""

from __future__ import annotations

from tpubench.core import registry


def of_classes(package: str, flag: str) -> registry.Registry:
    """The registry of FLAG's values: the classes of PACKAGE's modules and of the installed
    packages' entry points in the group named PACKAGE, each stored as its one instance."""
    return registry.Registry(
        flag,
        package=package,
        group=package,
        make=lambda cls: cls(),
        plugin=lambda obj: isinstance(obj, type),
        hint=f"; a new one is a module of {package} or an installed package's entry point "
        f"in the group {package}",
    )
