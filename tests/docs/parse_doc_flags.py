"""Parses doc commands with one subcommand's flag definitions and runs none (test_doc_commands).

    python parse_doc_flags.py SUBCOMMAND < argvs.json
    -> {"flags": [every flag name], "errors": [null or the error, per argv]}

Each argv is what follows `tpubench SUBCOMMAND`.  It is parsed as cli/main.py parses it
(absl, then every number's range from core/bounds.py), then read the way the subcommand's
main first reads it: its config (cli/configs.py) and the checks that need only the flags
(a duration, a batch-size list, a study's arguments and a shipped study file).  Flags are
read at run time, so a flag added tomorrow is known here tomorrow.
"""

from __future__ import annotations

import json
import sys

from absl import app
from absl import flags as absl_flags

from tpubench.cli import configs, main, values
from tpubench.cli import flags as flags_lib
from tpubench.core import errors

SUB = sys.argv[1]
flags_lib.define(SUB)
app.define_help_flags()  # as app.run does: --help, --helpshort, --helpfull
FLAGS = absl_flags.FLAGS
BUILT_IN = ["flagfile", "undefok"]  # absl's own, read by the parser itself


def _validate(args: list[str]) -> None:
    if SUB in ("train", "tune"):  # tune checks every train flag before its first trial
        configs.train_config()
    if SUB == "tune":
        values.parse_duration(FLAGS.budget, "--budget")
        values.parse_batch_sizes(FLAGS.batch_sizes, "--batch_sizes")
    if SUB == "infer":
        configs.infer_config()
    if SUB == "report":
        configs.report_config(args)
    if SUB == "advise":
        configs.advise_config(args)
    if SUB == "data" and args[:1] == ["bench"]:
        configs.data_bench_config()
    if SUB == "data" and args[:1] == ["prepare"]:
        configs.data_options()
    if SUB == "study":
        from tpubench.cli import study
        from tpubench.study import api
        from tpubench.study.spec import spec

        api.check(args[0], args[1:], study.options())
        if args[1:] and args[1] in spec.shipped():
            api.load(args[1], study.options(), args[0] == "run")


def main_() -> None:
    out = []
    for argv in json.load(sys.stdin):
        FLAGS.unparse_flags()
        try:
            rest = FLAGS([f"tpubench {SUB}", *argv])
            main._check_ranges()
            _validate(rest[1:])
            out.append(None)
        except (absl_flags.Error, errors.TpubenchError) as e:
            out.append(f"{type(e).__name__}: {e}")
    print(json.dumps({"flags": sorted([*FLAGS, *BUILT_IN]), "errors": out}))


if __name__ == "__main__":
    main_()
