"""Models register here by name; the runner looks them up.

Model modules live in the `tpubench_models` package (the repository's
`models/` folder) and call `register(spec)` at import.  Lookups import that
package lazily, so `tpubench prices` or a report never pays for TensorFlow.

An installed package adds models the Python way, through the entry-point
group `tpubench.models` (`NAME = module` or `NAME = module:SPEC` in its
pyproject's `[project.entry-points."tpubench.models"]`): the name is known
from the package's metadata alone (listing and did-you-mean import nothing),
and `--model=NAME` imports that one entry, whose module registers the model
(or whose object is the ModelSpec).  `--model_module` stays for a file or a
module that is not installed.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import re
import sys

from tpubench.core import errors, installed
from tpubench.core import names as names_lib
from tpubench.core import registry as registry_lib
from tpubench.model import shipped
from tpubench.model.model_api import RUNTIME_PARAMS, ModelSpec

# Every unknown-model line ends with the way to a model of one's own.
OWN_MODEL_HINT = "; or load your own with --model_module=FILE.py"

# The models: the modules of tpubench_models (each named as its model) and the installed
# packages' entry points under installed.MODELS, whose object may be the ModelSpec itself.
MODELS = registry_lib.Registry(
    "model",
    package=names_lib.BUILTIN_MODELS,
    group=installed.MODELS,
    plugin=lambda obj: isinstance(obj, ModelSpec),
    valid=names_lib.is_model_name,  # checked before any import (core/names.py)
    listed=shipped.names,
    hint=OWN_MODEL_HINT,
)


def plugin_names() -> dict[str, object]:
    """{model name: entry point} that installed packages declare under installed.MODELS (no import);
    a distribution in the working directory is no installed package (core/installed.py)."""
    return MODELS.entries()


def plugin_package(name: str) -> str | None:
    """'acme-models 1.2', the installed package whose plug-in model NAME is; None if none."""
    return MODELS.entry_package(name)


def unknown_name(name: str, known) -> errors.UsageError:
    """The unknown-model error: close matches, the accepted names, then --model_module."""
    return MODELS.unknown(name, known)


def unknown_model(name: str, known) -> errors.UsageError:
    """The unknown-model error, saying so when a package in the working directory declares it."""
    e = unknown_name(name, known)
    note = installed.left_out_note(name, installed.entry_points(installed.MODELS)[1])
    return errors.UsageError(f"{e}{note}") if note else e


def register(spec: ModelSpec) -> ModelSpec:
    """Adds a model; a second spec under the same name is a programming error."""
    return MODELS.register(spec)


def load_module(name_or_path: str) -> None:
    """Imports a user's model module (a dotted name or a .py file) so it registers."""

    try:
        if name_or_path.endswith(".py"):
            if not os.path.isfile(name_or_path):
                raise errors.UsageError(
                    f"--model_module={name_or_path}: no such file (expected a .py file or a "
                    "module name on PYTHONPATH)"
                )
            mod_name = "tpubench_user_" + os.path.splitext(os.path.basename(name_or_path))[0]
            spec = importlib.util.spec_from_file_location(mod_name, name_or_path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[mod_name] = module
            spec.loader.exec_module(module)
        else:
            importlib.import_module(name_or_path)
    except ModuleNotFoundError as e:
        raise errors.UsageError(
            f"--model_module={name_or_path}: cannot import {e.name!r} (expected a .py file or a "
            "module name on PYTHONPATH)"
        ) from None
    except SyntaxError as e:
        raise errors.UsageError(
            f"--model_module={name_or_path}: syntax error at line {e.lineno}: {e.msg}"
        ) from None


def names() -> list[str]:
    """Registered model names (installed packages' entry points loaded too), sorted."""
    return list(MODELS.names())


def get(name: str) -> ModelSpec:
    """The spec for `name`; an unknown name is a UsageError listing the models."""
    return MODELS.get(name)


def resolve_params(spec: ModelSpec, overrides: dict, tiny: bool = False) -> dict:
    """Default params, then the tiny variant, then `--params` overrides.

    Override values arrive as strings from the command line and are coerced
    to the type of the default they replace; an unknown key is an error.
    """
    params = dict(spec.default_params)
    if tiny:
        params.update(spec.tiny_params)
    for key, raw in overrides.items():
        if key in RUNTIME_PARAMS:  # the run sets these, over any value here
            raise errors.UsageError(
                f"--params: {key}={raw} is not a hyperparameter: " + RUNTIME_PARAMS[key].format(raw)
            )
        if key not in params:
            raise errors.UsageError(
                f"--params: model {spec.name!r} has no hyperparameter {key!r}"
                f"{errors.choices_hint(key, params)}"
            )
        params[key] = _coerce(key, raw, params[key])
        _check_range(key, params[key])
    return params


# Ranges by naming convention, the same for every model: (name pattern,
# accepts(value), what is accepted).  A value outside its range would build a
# model that cannot train (0 units, dropout >= 1) or fail deep inside Keras.
_RANGES = (
    (re.compile(r"dropout"), lambda v: 0 <= v < 1, "a number in [0, 1)"),
    (
        re.compile(r"learning_rate$|^max_grad_norm$|^init_scale$|multiplier$"),
        lambda v: v > 0,
        "a number > 0",
    ),
    (re.compile(r"weight_decay$"), lambda v: v >= 0, "a number >= 0"),
    (
        re.compile(
            r"^num_(classes|heads|layers|steps)$|units$|_size$|_dims$|^width$|^depth$"
            r"|_length$|^max_positions$"
        ),
        # Each of these sizes a tensor: past 2**20 one layer alone outgrows any host.
        lambda v: 1 <= v <= 1 << 20,
        "an integer from 1 to 1,048,576",
    ),
)


def _check_range(key: str, value) -> None:
    """A UsageError naming KEY=VALUE when it lies outside the range its name implies."""
    values = value if isinstance(value, (tuple, list)) else (value,)
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        if isinstance(v, float) and not math.isfinite(v):
            raise errors.UsageError(f"--params: {key}={v} is not a finite number")
        for pattern, accepts, what in _RANGES:
            if pattern.search(key) and not accepts(v):
                raise errors.UsageError(
                    f"--params: {key}={value!r} is out of range; accepted: {what}"
                )


def _coerce(key: str, raw, default):
    if not isinstance(raw, str):
        return raw
    try:
        if isinstance(default, bool):
            lowered = raw.lower()
            if lowered not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(raw)
            return lowered in ("true", "1", "yes")
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
        if isinstance(default, (tuple, list)):
            return type(default)(type(default[0])(x) for x in raw.split(":")) if default else ()
    except ValueError:
        kind = type(default).__name__
        raise errors.UsageError(
            f"--params: {key}={raw!r} is not a valid {kind} (default is {default!r})"
        ) from None
    return raw
