"""A plug-in for one test: `with added(REGISTRY, ToyExecutor): ...` and it is gone after.

Tests add a toy executor, engine, scenario or model through the registry's
own `register`, as a plug-in's module does, and take it out again with the
registry's `remove`: no test reaches into a registry's private state, so a
change to how a registry stores its plug-ins breaks no test.
"""

from __future__ import annotations

import contextlib

from tpubench.core import registry as registry_lib


@contextlib.contextmanager
def added(registry: registry_lib.Registry, *plugins):
    """Registers PLUGINS (each with a `name`) in REGISTRY for the `with` block, after the
    shipped ones are found (as a fresh process finds them).  Afterwards every name the block
    added is removed: PLUGINS, and any a module loaded inside the block registered itself."""
    before = set(registry.names())
    try:
        for plugin in plugins:
            registry.register(plugin)
        yield registry
    finally:
        for name in set(registry.registered()) - before:
            registry.remove(name)
