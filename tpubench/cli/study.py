"""`tpubench study list|run|report`: the published comparisons, rerun from one file each."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from absl import flags

from tpubench.core import columns, safe_text, vocab

FLAGS = flags.FLAGS
ACTIONS = ("list", "run", "report")
USAGE = "usage: tpubench study list | run NAME_OR_FILE | report NAME_OR_FILE"


def define():
    f = flags
    f.DEFINE_enum(
        "scale", "full", ["smoke", "full"], "smoke: tiny models, a few steps; full: the study's."
    )
    f.DEFINE_bool("dry-run", False, "run: show cells, commands and cost preview; run nothing.")
    f.DEFINE_enum(
        "executor",
        "local",
        list(vocab.STUDY_EXECUTORS),
        "Where the cells run: local (this host), or rented through tpubench-launch: gce "
        "(CPU/GPU VMs), tpu-vm (Cloud TPU VMs), gke (Jobs/JobSets); those need --cloud.",
    )
    f.DEFINE_string(
        "cloud",
        None,
        "run --executor=gce|tpu-vm|gke: a YAML file with the sweep's cloud settings (project, "
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
        list(vocab.PRICINGS),
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


def _known_flags() -> dict | None:
    """train, infer and data flag names, asked of tpubench (flags are defined once per process)."""
    from tpubench.children import command as child_command
    from tpubench.study import data_bench

    out = {}
    for command, sub in data_bench.SUBCOMMAND.items():
        done = subprocess.run(
            child_command.python_argv("tpubench.cli.flags", sub),
            capture_output=True,
            text=True,
            check=False,
            env=child_command.child_env(),
        )
        if done.returncode:
            return None
        out[command] = set(json.loads(done.stdout))
    return out


def _load(name: str, check_flags: bool):
    from tpubench.study import findings, report, spec

    known = _known_flags() if check_flags else None
    study = spec.load(name, report.FORMS, findings.CHECKS, known)
    _check_names(study)
    _check_numbers(study)
    _check_size(study)
    if check_flags:  # `run`: the file's flags become command lines (docs/security.md)
        _check_code(study)
    return study


def _check_size(study) -> None:
    """The cells a study file would expand to, counted before any is built; over the cap refused."""
    from tpubench.core import errors

    count = sum(len(p.setups) * len(p.models) * len(p.data) for p in study.parts)
    if count > FLAGS.max_cells:
        raise errors.UsageError(
            f"{study.path} expands to up to {count:,} cells (setups x models x data per "
            f"part), over --max_cells={FLAGS.max_cells:,}; nothing was expanded (raise "
            "--max_cells to run it)"
        )


def _check_numbers(study) -> None:
    """A study file's numbers within the ranges of the flags they become (core/bounds.py)."""
    from tpubench.core import bounds, errors

    sizes = {
        "devices": (1, 4096),
        "vcpus": (1, 4096),
        "batch_size": bounds.FLAGS["batch_size"][:2],
        "batch_per_device": bounds.FLAGS["batch_size"][:2],
        "jpeg_examples": (8, 10**7),
        "seconds": (1, bounds.MAX_DURATION_SECONDS),
    }

    def check(where: str, values: dict) -> None:
        for key, value in values.items():
            low, high = sizes.get(key, (None, None))
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if low is not None and number and not low <= value <= high:
                raise errors.UsageError(
                    f"{study.path}: {where}{key}={value!r} is out of range; accepted: {low:,} "
                    f"to {high:,}"
                )
            try:
                bounds.check_flag(key, value)
            except errors.UsageError as e:
                raise errors.UsageError(f"{study.path}: {where}{key}: {e}") from None

    for part in study.parts:
        check(f"parts ({part.name}): flags.", part.flags)
        for name, values in sorted(part.scale.items()):
            check(f"parts ({part.name}): scale.{name}.", values)
        for setup in part.setups:
            check(f"parts ({part.name}): setups ({setup.label}).", vars(setup))
        for item in part.models:
            check(f"parts ({part.name}): models ({item.model}).", vars(item))


def _check_names(study) -> None:
    """Names that become paths (results, logs, reports, charts) and models that are imported."""
    from tpubench.core import errors, names

    names.check_word(study.name, f"{study.path}: name")  # runs/studies/NAME, cell ids
    for part in study.parts:
        names.check_word(part.name, f"{study.path}: parts ({part.name}).name")  # chart files
        for item in part.models:
            if not names.is_model_name(item.model):
                raise errors.UsageError(
                    f"{study.path}: parts ({part.name}).models: unknown model "
                    f"{safe_text.shown(repr(item.model), 120)}; accepted: {names.MODEL_RULE}"
                )


def _check_code(study) -> None:
    """A study file naming code (model_module, flagfile) runs only with --trust_code; a file
    its local cells read (price_catalog, user_conf) must be a regular file of bounded size."""
    from tpubench.core import code_flags, safe_files

    warned = []
    for part in study.parts:
        places = [("flags.", part.flags)]
        places += [(f"scale.{s}.", v) for s, v in sorted(part.scale.items())]
        for where, values in places:
            lines = code_flags.check(
                study.path, f"parts ({part.name}): {where}", values, FLAGS.trust_code
            )
            warned += [x for x in lines if x not in warned]
            if FLAGS.executor == "local":
                safe_files.check_flags(values, f"{study.path}: parts ({part.name}): {where}")
    for line in warned:
        print(line, file=sys.stderr, flush=True)


def _list() -> int:
    from tpubench.study import cells, plan, spec

    host = cells.probe()
    print(f"{'study':<16} {'cells':>5} {'here':>5}  title")
    for name in spec.shipped():
        study = _load(name, False)
        p = plan.make(study, "full", host, os.path.join("runs", "studies", name))
        print(f"{name:<16} {len(p.cells):>5} {p.runnable:>5}  {study.title}")
    print(
        columns.fold(
            f"\ncells: at --scale=full; here: runnable on this host ({host.describe()}).\n"
            f"study files: {spec.shipped_dir()} (copy one, change it, run `tpubench study run "
            "FILE.yaml`)"
        )
    )
    return 0


def _check_args(args: list[str]) -> None:
    from tpubench.core import errors

    if not args:
        raise errors.UsageError(USAGE)
    if args[0] not in ACTIONS:
        raise errors.unknown("study action", args[0], ACTIONS)
    if args[0] == "list" and len(args) > 1:
        raise errors.UsageError(f"tpubench study list takes no arguments (got {args[1]!r})")
    if args[0] != "list" and len(args) != 2:
        raise errors.UsageError(f"{USAGE} (one study; `tpubench study list` names them)")
    if args[0] == "run" and FLAGS.executor != "local" and not FLAGS.cloud:
        raise errors.UsageError(
            f"--executor={FLAGS.executor} needs --cloud=FILE.yaml (cloud settings and machines:; "
            "see docs/studies.md)"
        )
    if args[0] == "run" and FLAGS.executor == "local" and FLAGS.cloud:
        raise errors.UsageError(
            f"--cloud={FLAGS.cloud} is for --executor=gce, tpu-vm or gke; local cells run here"
        )
    if FLAGS.plan_for is not None and (
        args[0] != "run" or not FLAGS["dry-run"].value or FLAGS.executor != "local"
    ):
        raise errors.UsageError(
            f"--plan_for={FLAGS.plan_for} plans a machine that is not this one: it goes with "
            "`tpubench study run NAME --dry-run` (local executor) only"
        )
    if FLAGS.gcs_data and not FLAGS.gcs_data.startswith("gs://"):
        raise errors.UsageError(f"--gcs_data={FLAGS.gcs_data} must be a gs://BUCKET/PATH")


def main(args: list[str], full_argv: list[str]) -> int:
    from tpubench.core import errors
    from tpubench.study import cells, plan

    _check_args(args)
    if args[0] == "list":
        return _list()
    study = _load(args[1], args[0] == "run")
    results_dir = FLAGS.results_dir or os.path.join("runs", "studies", study.name)
    if "://" in results_dir:
        raise errors.UsageError(f"--results_dir={results_dir}: a study's records stay local")
    host = cells.probe(FLAGS.gcs_data) if FLAGS.plan_for is None else _planned_host()
    if args[0] == "run" and FLAGS.executor != "local":
        from tpubench.cli import study_remote

        return study_remote.run(study, host, results_dir, _report)
    scale = _report_scale(study, results_dir) if args[0] == "report" else FLAGS.scale
    p = plan.make(study, scale, host, results_dir)
    failed = []
    if args[0] == "run":
        failed = _run(study, p, host, results_dir)
        if failed is None:  # a dry run
            return 0
    _report(study, p, host, results_dir, scale=scale)
    if failed:
        err = errors.TpubenchError(
            f"{len(failed)} cell(s) failed ({', '.join(c.id for c, _, _ in failed)}); first: "
            f"{failed[0][2]}; run the same command again to retry them (recorded cells are "
            "skipped)"
        )
        err.exit_code = 1
        raise err
    return 0


def _planned_host():
    """--plan_for's machine as a Host: its GPUs, TPU and vCPUs from the catalog name."""
    from tpubench.study import remote

    return remote.remote_host(FLAGS.plan_for.strip(), FLAGS.gcs_data, "--plan_for")


def _run(study, p, host, results_dir: str) -> list | None:
    """Runs the cells to run; None for a dry run, else the cells that failed."""
    from tpubench.study import execute, plan

    scale = FLAGS.scale
    print("\n".join(plan.header(study, p, scale, host, results_dir)))
    print("\n".join(plan.preview(study, p, scale, host.machine)), flush=True)
    jpeg = _jpeg(p, scale, results_dir)
    jpeg_dir = jpeg[0] if jpeg else None
    if FLAGS["dry-run"].value:
        print("dry run: these commands would run, in this order:")
        if jpeg and not os.path.exists(os.path.join(jpeg_dir, "manifest.json")):
            print(
                "tpubench data prepare --dataset=photos --record_format=jpeg "
                f"--examples={jpeg[1]} --output={jpeg_dir}"
            )
        for c in p.todo:
            print(f"# {c.id}: {c.describe()}")
            print(c.shell(host, results_dir, jpeg_dir))
        return None
    if not p.todo:
        return []
    if jpeg:
        execute.prepare_jpeg(jpeg_dir, jpeg[1], sys.stdout)
    done = execute.run_cells(
        p.todo_runs(), host, results_dir, jpeg_dir, sys.stdout, rerun_busy=p.repeats > 1
    )
    return [(c, s, w) for c, s, w in done if s not in execute.DONE]


def _report_scale(study, results_dir: str) -> str:
    """--scale when given; else full, or smoke when only smoke cells are recorded (said so)."""
    from tpubench.storage import records
    from tpubench.study import cells

    if FLAGS["scale"].present:
        return FLAGS.scale
    found = records.by_label(results_dir)
    full, smoke = (sum(c.id in found for c in cells.expand(study, s)) for s in ("full", "smoke"))
    if smoke and not full:
        print(
            columns.fold(
                f"no cell of {study.name} is recorded at --scale=full in {results_dir}: "
                f"reporting the {smoke} cell(s) recorded at --scale=smoke (--scale chooses)\n"
            )
        )
        return "smoke"
    return FLAGS.scale


def _report(study, p, host, results_dir: str, needs=None, where="here", scale=None) -> None:
    from tpubench.storage import files
    from tpubench.study import charts, measured, report

    scale = scale or FLAGS.scale
    results = measured.collect(
        study, list(p.cells), host, results_dir, scale, needs, where, FLAGS.pricing
    )
    out_dir = os.path.join(results_dir, "report")
    os.makedirs(out_dir, exist_ok=True)
    pngs = charts.write(results, out_dir)
    text = report.render(results, pngs)
    md = files.write_atomic(os.path.join(out_dir, f"{study.name}-{scale}.md"), text + "\n")
    # The console gets the Markdown drawn (tables, headings), without the chart links.
    print(_drawn(safe_text.block(report.render(results, []))))  # records: data from anywhere
    print(columns.fold(f"report: {md}" + (f"; charts: {', '.join(pngs)}" if pngs else "")))


def _drawn(markdown: str) -> str:
    """MARKDOWN as a console shows it: tables drawn, headings and lists plain, fitted to width."""
    import io

    from rich.console import Console
    from rich.markdown import Markdown

    out = io.StringIO()
    console = Console(file=out, width=columns.width(), color_system=None, force_terminal=False)
    console.print(Markdown(markdown))
    return "\n".join(x.rstrip() for x in out.getvalue().splitlines())


def _jpeg(p, scale: str, results_dir: str):
    """(directory, examples) of the JPEG photos the cells to run read, or None."""
    from tpubench.study import execute

    uses = [c for c in p.todo if c.data == "jpeg"]
    if not uses:
        return None
    # One prepared copy serves every part: the largest any part asks for.
    examples = max(c.part.scale[scale].get("jpeg_examples", 2048) for c in uses)
    return execute.jpeg_dir(results_dir, examples), examples
