"""What `tpubench models` shows for the built-in models, shipped with the package.

Counting FLOPs traces every model (minutes on a small machine), yet the
counts depend only on the model, its parameters and the TensorFlow version.
So the rows of the built-in models at their default and tiny parameters
live in `shipped_models.json`, made by `python -m tpubench.model.shipped`
(`make models-table`) and checked by a test that counts them again.
Reading them imports no TensorFlow: `tpubench models` answers at once.
"""

from __future__ import annotations

import importlib.metadata
import json
import pathlib

PATH = pathlib.Path(__file__).with_name("shipped_models.json")
# The distributions that install the `tensorflow` module (one at a time).
_TF_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-tpu", "tf-nightly")


def tensorflow_version() -> str | None:
    """The installed TensorFlow's version, read from its package metadata (no import)."""
    for dist in _TF_DISTRIBUTIONS:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _minor(version: str | None) -> str | None:
    return ".".join(version.split(".")[:2]) if version else None


def load() -> dict:
    """The shipped table: {"tensorflow": "2.21", "models": {name: {"default": row, "tiny": row}}}.

    An unreadable table counts as empty: every model is then traced.
    """
    try:
        return json.loads(PATH.read_text())
    except (OSError, ValueError):
        return {"tensorflow": None, "models": {}}


def names(table: dict | None = None) -> list[str]:
    """The built-in models the table describes, sorted."""
    return sorted((table or load())["models"])


def check_name(name: str) -> None:
    """The unknown-model error for a name that is no identifier (`os.path`, `.evil`, `../x`).

    Checked before any import and before anything is written: a model name
    becomes part of the run id, hence of the record's file name.
    """
    from tpubench.core import names as name_rules
    from tpubench.model import registry  # no TensorFlow: the error's wording lives there

    if not name_rules.is_model_name(name):
        raise registry.unknown_name(name, names())


def check_known(name: str, model_modules=()) -> None:
    """The unknown-model error for a name no built-in model has, before TensorFlow loads.

    A model of one's own (--model_module) is known only once its module runs,
    so with one the registry decides later; so it does for a name the table
    lacks while `tpubench_models` holds a public module of that name (a model
    added since the table was made; never `__init__` or a private `_module`).
    """
    from tpubench.core import names as name_rules
    from tpubench.model import registry  # no TensorFlow: entry points are package metadata

    check_name(name)  # `os.path`, `.evil`, `../x` never reach an importer
    known = names()
    plugins = registry.plugin_names()  # installed packages' models (docs/adding_a_model.md)
    if model_modules or name in known or name in plugins:
        return
    if name not in name_rules.builtin_models():
        raise registry.unknown_model(name, set(known) | set(plugins))


def row(name: str, tiny: bool, table: dict | None = None) -> dict | None:
    """NAME's shipped row, or None when not shipped or counted under another TensorFlow."""
    table = table or load()
    if _minor(table.get("tensorflow")) != _minor(tensorflow_version()):
        return None
    entry = table["models"].get(name)
    return dict(entry["tiny" if tiny else "default"]) if entry else None


def build() -> dict:
    """Counts every built-in model at its default and tiny parameters (imports TensorFlow)."""
    import tensorflow as tf

    from tpubench.model import model_info, registry

    models = {}
    for name in registry.names():
        print(f"counting {name}", flush=True)
        models[name] = {
            "default": model_info.count(name, tiny=False),
            "tiny": model_info.count(name, tiny=True),
        }
    return {"tensorflow": _minor(tf.__version__), "models": models}


if __name__ == "__main__":
    table = build()
    PATH.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"wrote {PATH.name}: {len(table['models'])} models, TensorFlow {table['tensorflow']}")
