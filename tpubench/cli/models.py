"""`tpubench models`: registered models with parameters and FLOPs per example."""

from __future__ import annotations

import sys

from absl import flags

from tpubench.cli import flag_groups as groups

FLAGS = flags.FLAGS


def define():
    groups.define_model_module()
    flags.DEFINE_enum("format", "table", ["table", "json"], "Output format.")
    flags.DEFINE_bool("tiny", False, "Describe the tiny variants.")


def main(args: list[str], full_argv: list[str]) -> int:
    # Built-in models come from the shipped table: no TensorFlow unless a model
    # must be traced (--model_module, or a table made under another TensorFlow).
    from tpubench.model import model_info

    def progress(text: str) -> None:
        print(f"tpubench models: {text}", file=sys.stderr, flush=True)

    text = model_info.listing(args, FLAGS.format, FLAGS.tiny, tuple(FLAGS.model_module), progress)
    print(text)
    return 0
