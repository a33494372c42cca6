"""The study API: list, run and report the published comparisons, one file each.

    from tpubench.study import api
    options = api.Options(scale="smoke")
    api.run("cnn_scaling", options, sys.stdout)     # the cells not yet recorded, then the report
    api.report("cnn_scaling", options, sys.stdout)  # the report of what is recorded

`tpubench study` (cli/study.py) only turns flags into Options and prints errors;
everything a study does, and every check of its file, is here and in spec.load.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TextIO

from tpubench.core import columns, errors, safe_text
from tpubench.study.report import findings, forms
from tpubench.study.report import report as study_report
from tpubench.study.run import cells, execute, executors, measured, plan, remote, this_host
from tpubench.study.spec import file_rules, spec, validate

ACTIONS = ("list", "run", "report")
USAGE = "usage: tpubench study list | run NAME_OR_FILE | report NAME_OR_FILE"


@dataclasses.dataclass(frozen=True)
class Options:
    """How to run or report a study (each is the `tpubench study` flag of the same name)."""

    scale: str = "full"
    scale_given: bool = True  # report: False lets a study recorded only at smoke report that
    dry_run: bool = False
    executor: str = "local"
    cloud: str | None = None
    plan_for: str | None = None
    results_dir: str | None = None
    gcs_data: str | None = None
    pricing: str | None = None
    max_cells: int = 10_000
    trust_code: bool = False


def check(action: str, args: list[str], options: Options) -> None:
    """ACTION with ARGS (the study names) and OPTIONS, before anything is read."""
    if action not in ACTIONS:
        raise errors.unknown("study action", action, ACTIONS)
    if action == "list" and args:
        raise errors.UsageError(f"tpubench study list takes no arguments (got {args[0]!r})")
    if action != "list" and len(args) != 1:
        raise errors.UsageError(f"{USAGE} (one study; `tpubench study list` names them)")
    local = options.executor == executors.LOCAL
    if not local:  # one of tpubench-launch's renting executors; asked with the --cloud file
        # a run reads (the one answer remote.load_cloud reads it from: study/run/executors.py)
        executors.get(options.executor, options.cloud if action == "run" else None)
    if action == "run" and not local and not options.cloud:
        raise errors.UsageError(
            f"--executor={options.executor} needs --cloud=FILE.yaml (cloud settings and "
            "machines:; see docs/studies.md)"
        )
    if action == "run" and local and options.cloud:
        raise errors.UsageError(
            f"--cloud={options.cloud} is for a renting executor "
            f"({executors.either(list(executors.names()[1:]))}); local cells run here"
        )
    if options.plan_for is not None and (action != "run" or not options.dry_run or not local):
        raise errors.UsageError(
            f"--plan_for={options.plan_for} plans a machine that is not this one: it goes with "
            "`tpubench study run NAME --dry-run` (local executor) only"
        )
    if options.gcs_data and not options.gcs_data.startswith("gs://"):
        raise errors.UsageError(f"--gcs_data={options.gcs_data} must be a gs://BUCKET/PATH")


def load(name: str, options: Options, run: bool = False) -> spec.Study:
    """The study file NAME (shipped name or path), checked; RUN: as `run` checks it (its flags
    against tpubench's, the code it names against --trust_code)."""
    rules = file_rules.Rules(
        options.max_cells, run, options.trust_code, options.executor == executors.LOCAL
    )
    known = validate.known_flags() if run else None
    return spec.load(name, forms.FORMS, findings.CHECKS, known, rules)


def listing(out: TextIO) -> None:
    """The shipped studies: cells at full scale, how many run here, title."""
    host = this_host.probe()
    print(f"{'study':<16} {'cells':>5} {'here':>5}  title", file=out)
    for name in spec.shipped():
        study = load(name, Options())
        p = plan.make(study, "full", host, os.path.join("runs", "studies", name))
        print(f"{name:<16} {len(p.cells):>5} {p.runnable:>5}  {study.title}", file=out)
    print(
        columns.fold(
            f"\ncells: at --scale=full; here: runnable on this host ({host.describe()}).\n"
            f"study files: {spec.shipped_dir()} (copy one, change it, run `tpubench study run "
            "FILE.yaml`)"
        ),
        file=out,
    )


def results_dir(study: spec.Study, options: Options) -> str:
    where = options.results_dir or os.path.join("runs", "studies", study.name)
    if "://" in where:
        raise errors.UsageError(f"--results_dir={where}: a study's records stay local")
    return where


def run(study: spec.Study, options: Options, out: TextIO) -> int:
    """Runs STUDY's cells not yet recorded (or shows them: dry_run), then writes its report.

    Returns 0, or tpubench-launch's exit code where it refused the sweep (and said why);
    raises a TpubenchError (exit 1, or the launcher's code) when cells failed.
    """
    where = results_dir(study, options)
    host = _host(options)
    if options.executor != executors.LOCAL:
        from tpubench.study.run import remote_run

        return remote_run.run(study, host, where, options, _reporter(options, out), out)
    p = plan.make(study, options.scale, host, where)
    print("\n".join(plan.header(study, p, options.scale, host, where)), file=out)
    print("\n".join(plan.preview(study, p, options.scale, host.machine)), file=out, flush=True)
    jpeg = _jpeg(p, options.scale, where)
    if options.dry_run:
        _dry_run(p, host, where, jpeg, out)
        return 0
    failed = []
    if p.todo:
        if jpeg:
            execute.prepare_jpeg(jpeg[0], jpeg[1], out)
        done = execute.run_cells(
            p.todo_runs(), host, where, jpeg and jpeg[0], out, rerun_busy=p.repeats > 1
        )
        failed = [(c, s, w) for c, s, w in done if s not in execute.DONE]
    write_report(study, p, host, where, options, out, scale=options.scale)
    if failed:
        raise errors.TpubenchError(
            f"{len(failed)} cell(s) failed ({', '.join(c.id for c, _, _ in failed)}); first: "
            f"{failed[0][2]}; run the same command again to retry them (recorded cells are "
            "skipped)",
            exit_code=1,
        )
    return 0


def report(study: spec.Study, options: Options, out: TextIO) -> None:
    """Writes STUDY's report from the records in its results directory, and prints it."""
    where = results_dir(study, options)
    host = _host(options)
    scale = _report_scale(study, options, where, out)
    p = plan.make(study, scale, host, where)
    write_report(study, p, host, where, options, out, scale=scale)


def _host(options: Options) -> cells.Host:
    """This host, or --plan_for's catalog machine as a Host (its GPUs, TPU and vCPUs)."""
    if options.plan_for is None:
        return this_host.probe(options.gcs_data)
    return remote.remote_host(options.plan_for.strip(), options.gcs_data, "--plan_for")


def _dry_run(p, host, where: str, jpeg, out: TextIO) -> None:
    print("dry run: these commands would run, in this order:", file=out)
    if jpeg and not os.path.exists(os.path.join(jpeg[0], "manifest.json")):
        print(
            "tpubench data prepare --dataset=photos --record_format=jpeg "
            f"--examples={jpeg[1]} --output={jpeg[0]}",
            file=out,
        )
    for c in p.todo:
        print(f"# {c.id}: {c.describe()}", file=out)
        print(c.shell(host, where, jpeg and jpeg[0]), file=out)


def _report_scale(study: spec.Study, options: Options, where: str, out: TextIO) -> str:
    """options.scale when given; else full, or smoke when only smoke cells are recorded."""
    from tpubench.study.run import cell_records

    if options.scale_given:
        return options.scale
    full, smoke = (
        sum(1 for s in cell_records.of_cells(cells.expand(study, scale), where).values() if s.ours)
        for scale in ("full", "smoke")
    )
    if smoke and not full:
        print(
            columns.fold(
                f"no cell of {study.name} is recorded at --scale=full in {where}: "
                f"reporting the {smoke} cell(s) recorded at --scale=smoke (--scale chooses)\n"
            ),
            file=out,
        )
        return "smoke"
    return options.scale


def _reporter(options: Options, out: TextIO):
    """write_report for the remote path: (study, plan, host, dir, needs, where) -> None."""

    def report_to(study, p, host, where, needs=None, said="here") -> None:
        write_report(study, p, host, where, options, out, needs, said)

    return report_to


def write_report(
    study, p, host, where: str, options: Options, out: TextIO, needs=None, said="here", scale=None
) -> None:
    """The report's Markdown and charts under WHERE/report; the console gets the tables drawn."""
    from tpubench.storage import files
    from tpubench.study.report import charts  # matplotlib: only once a report is written

    scale = scale or options.scale
    results = measured.collect(
        study, list(p.cells), host, where, scale, needs, said, options.pricing
    )
    out_dir = os.path.join(where, "report")
    os.makedirs(out_dir, exist_ok=True)
    pngs = charts.write(results, out_dir)
    text = study_report.render(results, pngs)
    md = files.write_atomic(os.path.join(out_dir, f"{study.name}-{scale}.md"), text + "\n")
    # The console gets the Markdown drawn (tables, headings), without the chart links.
    drawn = _drawn(safe_text.block(study_report.render(results, [])))
    print(drawn, file=out)
    print(
        columns.fold(f"report: {md}" + (f"; charts: {', '.join(pngs)}" if pngs else "")), file=out
    )


def _drawn(markdown: str) -> str:
    """MARKDOWN as a console shows it: tables drawn, headings and lists plain, fitted to width."""
    import io

    from rich.console import Console
    from rich.markdown import Markdown

    buffer = io.StringIO()
    console = Console(file=buffer, width=columns.width(), color_system=None, force_terminal=False)
    console.print(Markdown(markdown))
    return "\n".join(x.rstrip() for x in buffer.getvalue().splitlines())


def _jpeg(p, scale: str, where: str):
    """(directory, examples) of the JPEG photos the cells to run read, or None."""
    uses = [c for c in p.todo if c.data == "jpeg"]
    if not uses:
        return None
    # One prepared copy serves every part: the largest any part asks for.
    examples = max(c.part.scale[scale].get("jpeg_examples", 2048) for c in uses)
    return execute.jpeg_dir(where, examples), examples
