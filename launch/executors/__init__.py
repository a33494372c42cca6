"""Where sweep configurations run: one module per `--executor`, each a `base.Executor`.

A module here defines its executor class decorated with `REGISTRY.register`;
the `--executor` help, the unknown-executor error and the smoke layer's list
of commands all read `REGISTRY.names()`.  A new executor is one module in
this package (and its test).
"""

from __future__ import annotations

from tpubench_launch import plugins

REGISTRY = plugins.of_classes(__name__, "--executor")
DEFAULT = "local"
