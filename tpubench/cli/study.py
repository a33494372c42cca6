"""`tpubench study list|run|report`: the published comparisons, rerun from one file each.

The flags and their parsing; what a study does is study/api.py's.
"""

from __future__ import annotations

import sys

from absl import flags

from tpubench.core import basis, errors
from tpubench.study import api

FLAGS = flags.FLAGS


def define():
    f = flags
    f.DEFINE_enum(
        "scale", "full", ["smoke", "full"], "smoke: tiny models, a few steps; full: the study's."
    )
    f.DEFINE_bool("dry-run", False, "run: show cells, commands and cost preview; run nothing.")
    f.DEFINE_string(
        "executor",
        "local",
        "Where the cells run: local (this host), or an executor of tpubench-launch that rents "
        "machines (`tpubench-launch executors` lists them and what each hosts); those need "
        "--cloud.",
    )
    f.DEFINE_string(
        "cloud",
        None,
        "run with a renting --executor: a YAML file with the sweep's cloud settings (project, "
        "zone, bucket, image, ...) and machines: (setup label -> machine to rent).",
    )
    f.DEFINE_string(
        "plan_for",
        None,
        "run --dry-run: plan for this catalog machine instead of this host (e.g. "
        "gcp:a3-highgpu-8g, gcp:tpu-v5e-8, gcp:n1-standard-64): which cells it could run, "
        "which not and why, and their commands.",
    )
    f.DEFINE_string(
        "results_dir", None, "Records, logs and the report (default runs/studies/NAME)."
    )
    f.DEFINE_string("gcs_data", None, "gs:// copy of the JPEG photos, for the gs:// cells.")
    f.DEFINE_enum(
        "pricing",
        None,
        list(basis.CHOSEN),
        "Price basis of every dollar figure of the report: on_demand or spot (default: each "
        "setup's own `pricing:`, the seed's, named on its row).",
    )
    f.DEFINE_integer(
        "max_cells",
        10_000,
        "Refuse a study file that expands to more cells than this (counted before expanding).",
        lower_bound=1,
        upper_bound=10_000_000,
    )
    f.DEFINE_bool(
        "trust_code",
        False,
        "run: a study file whose flags name model_module or flagfile (code every cell imports "
        "and runs); without it such a file is refused.",
    )


def options() -> api.Options:
    """The flags as the study API's options."""
    return api.Options(
        scale=FLAGS.scale,
        scale_given=FLAGS["scale"].present,
        dry_run=FLAGS["dry-run"].value,
        executor=FLAGS.executor,
        cloud=FLAGS.cloud,
        plan_for=FLAGS.plan_for,
        results_dir=FLAGS.results_dir,
        gcs_data=FLAGS.gcs_data,
        pricing=basis.parse(FLAGS.pricing) if FLAGS.pricing else None,
        max_cells=FLAGS.max_cells,
        trust_code=FLAGS.trust_code,
    )


def main(args: list[str], _full_argv: list[str]) -> int:
    if not args:
        raise errors.UsageError(api.USAGE)
    action, names, given = args[0], args[1:], options()
    api.check(action, names, given)
    if action == "list":
        api.listing(sys.stdout)
        return 0
    study = api.load(names[0], given, run=action == "run")
    for line in study.said:  # the code the file names (run with --trust_code)
        print(line, file=sys.stderr, flush=True)
    if action == "run":
        return api.run(study, given, sys.stdout)
    api.report(study, given, sys.stdout)
    return 0
