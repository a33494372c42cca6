"""`tpubench-launch sweep FILE --executor=...`: resume check, cost preview, then the runs."""

from __future__ import annotations

import os
import sys

from tpubench.core import basis
from tpubench_launch import commands, errors, executors, preview
from tpubench_launch.sweep import file as sweep_file
from tpubench_launch.sweep import resume


def _check_flag_names(sw, out) -> None:
    """Every flag a configuration passes must be one `tpubench train` accepts."""
    import difflib

    for c in sw.configs:
        for name, value in c.train_flags().items():
            hint = commands.gs_typo_hint(value) or commands.gs_problem(value)
            if hint:
                raise errors.UsageError(f"{sw.path}: flags.{name}={hint}")
    known = {}
    for c in sw.configs:
        if c.command not in known:
            known[c.command] = commands.tpubench_flag_names(c.command)
        if known[c.command] is None:
            print(
                "note: could not ask tpubench for its flags (is it installed here?); "
                "flag names are not checked before the runs start",
                file=out,
            )
            return
        for name in c.train_flags():
            if name not in known[c.command]:
                close = difflib.get_close_matches(name, known[c.command], n=1)
                hint = f"; did you mean {close[0]}?" if close else ""
                where = f"runs ({c.id}): " if c.summary else ""
                raise errors.UsageError(
                    f"{sw.path}: {where}flags.{name} is not a `tpubench {c.command}` flag{hint} "
                    f"(`tpubench {c.command} --helpfull` lists them); nothing was launched"
                )


def run(
    path: str,
    executor: str,
    dry_run: bool,
    results_dir: str | None,
    max_cost: float | None,
    argv: list[str],
    out=None,
    trust_code: bool = False,
    max_configs: int = sweep_file.MAX_CONFIGS,
) -> None:
    """Runs the sweep; raises TaskFailed when any configuration failed."""
    out = out or sys.stdout
    sw = sweep_file.load(path, executor, results_dir, trust_code, max_configs)
    for line in sw.warnings:
        print(line, file=sys.stderr, flush=True)
    if not sw.configs:
        raise errors.UsageError(f"{path}: the grid is empty")
    if "://" in sw.results_dir:
        raise errors.UsageError(
            f"results_dir={sw.results_dir}: the sweep's results directory is local (cloud runs "
            "write to cloud.bucket and are copied here)"
        )
    _check_flag_names(sw, out)  # before any VM exists: a misspelt flag costs nothing
    ex = executors.REGISTRY.get(executor)
    settings = ex.settings(sw, dry_run=dry_run)
    ex.check_hosted(sw.configs)  # what it hosts: refused before any tool or copy runs
    log_dir = os.path.join(sw.results_dir, "logs")
    if not dry_run:
        ex.before_runs(sw, settings, out)
    resumed = resume.find(sw.results_dir, sw.configs, lambda c: ex.model_dir(c, settings, sw))
    todo = [c for c in sw.configs if c.id not in resumed.done]
    skipped = len(sw.configs) - len(todo)
    print(
        f"sweep {sw.name}: {len(sw.configs)} configuration(s), {skipped} already recorded in "
        f"{sw.results_dir}, {len(todo)} to run (--executor={executor})",
        file=out,
    )
    for line in resumed.left_out:  # a configuration's label on a record of something else
        print(f"  {line}", file=out)
    for line in ex.code_lines(settings):
        print(line, file=out)
    pricing = (
        basis.Basis.SPOT
        if settings and settings.spot
        else basis.parse(sw.configs[0].fixed_flags.get("pricing", basis.DEFAULT), "pricing")
    )
    plans = ex.plans(sw, todo, settings, log_dir)  # all checked up front
    rows = preview.rows(sw, sw.configs, resumed, pricing, ex.vms, ex.overhead_seconds(settings))
    print(preview.render(rows, ex.preview_title(pricing, settings)), file=out, flush=True)
    total = preview.total_usd(rows)
    if max_cost is not None and total > max_cost:
        raise errors.UsageError(
            f"the estimated cost ${total:,.2f} is over --max-cost={max_cost:g}; nothing was "
            "launched (raise --max-cost or trim the grid)"
        )
    if not todo:
        print(f"sweep {sw.name}: nothing to run; records are in {sw.results_dir}", file=out)
        return
    if dry_run:
        print("dry run: these commands would run, in this order:", file=out)
        for c, plan in zip(todo, plans, strict=True):
            print(f"# {c.id}: {c.describe()}", file=out)
            for line in ex.dry_run_lines(c, plan, sw.results_dir):
                print(line, file=out)
        return
    results = ex.execute(sw, todo, plans, argv, log_dir, out)
    failed = [(c, code, what) for c, code, what in results if code]
    if failed:
        ids = ", ".join(c.id for c, _, _ in failed)
        raise errors.TaskFailed(
            f"{len(failed)} of {len(todo)} configuration(s) failed ({ids}); first: "
            f"{failed[0][2]}; rerun the same command to retry them (finished ones are skipped)",
            exit_code=failed[0][1],
        )
    print(
        f"sweep {sw.name}: {len(todo)} configuration(s) done; records in {sw.results_dir}", file=out
    )
