"""`tpubench models`: registered models with parameters and FLOPs per example."""

from __future__ import annotations

from absl import flags

from tpubench.cli import flag_groups as groups
from tpubench.cli import tflog
from tpubench.core import safe_text

FLAGS = flags.FLAGS


def define():
    groups.define_model_module()
    flags.DEFINE_enum("format", "table", ["table", "json"], "Output format.")
    flags.DEFINE_bool("tiny", False, "Describe the tiny variants.")


def main(args: list[str], full_argv: list[str]) -> int:
    tflog.import_tensorflow()
    from tpubench.model import model_info, registry  # deferred: models import TensorFlow

    for module in FLAGS.model_module:
        registry.load_module(module)
    # Names and descriptions may come from a --model_module: shown escaped.
    print(safe_text.block(model_info.listing(args, FLAGS.format, FLAGS.tiny)))
    return 0
