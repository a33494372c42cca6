"""tpubench: write a TensorFlow model once, benchmark it on TPU, GPU or CPU.

Packages, top to bottom (docs/architecture.md): cli, run, report / data /
hardware / cost / model, storage, core.  A model module of your own imports
the contract from `tpubench.model` (docs/adding_a_model.md).
"""

import importlib

__version__ = "0.1.0"

# Model modules written before the package was layered import the contract as
# `from tpubench import model_api, registry`; their files are users' code (and
# recorded runs name them), so those names still resolve, to the one module.
_MODEL_CONTRACT = ("model_api", "registry", "layers", "optim")


def __getattr__(name):
    if name in _MODEL_CONTRACT:
        return importlib.import_module(f"tpubench.model.{name}")
    raise AttributeError(f"module 'tpubench' has no attribute {name!r}")
