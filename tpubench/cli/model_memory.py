"""The model flags a --model_dir remembers, set at the CLI edge (model/remembered.py).

`infer --model_dir=D` and `tune --model_dir=D` take the model that was
trained in D (its name, --params, --tiny and --model_module) where the user
gave none, before TensorFlow loads; the remembered module needs --trust_code.
"""

from __future__ import annotations

import sys

from absl import flags

from tpubench.core import safe_text
from tpubench.model import remembered

FLAGS = flags.FLAGS
MODEL_FLAGS = ("model", "params", "tiny", "model_module")


def define_trust_code() -> None:
    flags.DEFINE_bool(
        "trust_code",
        False,
        "Import the --model_module that the --model_dir's run was trained with (its model.json "
        "names it; code from a file): without it such a model_dir is refused.",
    )


def apply(sub: str) -> bool:
    """Sets the model flags --model_dir remembers that were not given; False if it has none."""
    given = {n: FLAGS[n].value for n in MODEL_FLAGS if FLAGS[n].present}
    found, warnings = remembered.model_flags(FLAGS.model_dir, given, FLAGS.trust_code)
    for name, value in found.items():
        FLAGS[name].value = value
        FLAGS[name].present = 1  # as if typed: tune passes it on to every trial
    for line in warnings:
        print(f"tpubench {sub}: {safe_text.shown(line, None)}", file=sys.stderr, flush=True)
    return bool(found) or remembered.read(FLAGS.model_dir) is not None
