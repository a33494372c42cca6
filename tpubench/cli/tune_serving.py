"""`tpubench tune --objective=serving`: its flags, its run and its console texts.

Each trial is a `tpubench infer --scenario=server` process (tpubench/tune/serving.py
searches); the winner is written as an infer flag file, and `tpubench advise --qps`
given the tune's directory prices the winner's records only.
"""

from __future__ import annotations

import io
import json
import os

from absl import flags
from rich.console import Console
from rich.table import Table

from tpubench.children import command
from tpubench.cli import console_format as fmt
from tpubench.cli import scenario_flags, values
from tpubench.core import columns, errors, safe_text
from tpubench.run.infer import scenarios
from tpubench.tune import disk_full

FLAGS = flags.FLAGS
SUMMARY = "tune-summary.json.txt"  # the same name as training's: advise looks for it


def define():
    f = flags
    # The server scenario's own flags, as it declares them (help, range), with tune's defaults:
    # every trial passes them on to `tpubench infer --scenario=server`.
    scenario_flags.define_for(
        _server(),
        {"latency_bound": None, "latency_percentile": 99.0, "qps_search_runs": 5},
        "serving",
    )
    f.DEFINE_list(
        "batching_windows",
        [f"{w:g}ms" for w in (0.5, 2, 8)],
        "serving: batching windows to try (how long a batch waits for more queries).",
    )
    f.DEFINE_string(
        "serving_min_duration",
        "5s",
        "serving: LoadGen's minimum duration of each run in a trial's QPS search (MLPerf: "
        "600s; the records say whether a run keeps the model's MLPerf rules).",
    )
    f.DEFINE_integer(
        "serving_min_queries",
        200,
        "serving: LoadGen's minimum query count of each run (MLPerf's is far higher).",
        lower_bound=1,
    )


def _server():
    """The server scenario's plug-in: every serving trial is `infer --scenario=server`."""
    return scenarios.get("server")


def options(batch_sizes: tuple[int, ...], budget: float):
    """The serving search's options from the flags (one line and exit 2 on a bad value)."""
    from tpubench.tune import serving

    if FLAGS.latency_bound is None:
        raise errors.UsageError(
            "--objective=serving needs --latency_bound (the p99 a query may take), e.g. 50ms"
        )
    scenario_flags.parsed(_server(), "latency_bound")  # held to the server's declared range
    if not FLAGS.batching_windows:
        raise errors.UsageError("--batching_windows is empty; accepted: e.g. 0.5ms,2ms,8ms")
    windows = tuple(
        values.parse_duration(w, "--batching_windows") * 1e3 for w in FLAGS.batching_windows
    )
    values.parse_duration(FLAGS.serving_min_duration, "--serving_min_duration")
    return serving.Options(
        batches=batch_sizes or (1, 8, 32, 128),
        windows_ms=windows,
        budget_seconds=budget,
        repeats=FLAGS.repeats,
        max_repeats=FLAGS.max_repeats,
        margin=FLAGS.equivalence_margin / 100.0,
    )


def infer_flags(model_flags: dict) -> dict:
    """What every serving trial passes to `tpubench infer` besides its point."""
    return {
        **model_flags,
        "scenario": "server",
        "latency_bound": FLAGS.latency_bound,
        "latency_percentile": FLAGS.latency_percentile,
        "min_duration": FLAGS.serving_min_duration,
        "min_query_count": FLAGS.serving_min_queries,
        "qps_search_runs": FLAGS.qps_search_runs,
        "check_accuracy": False,
    }


def run(model: str, host, opts, base: dict, tune_id, records_dir, work_dir, say) -> int:
    from tpubench.tune import serving, trials

    bound = f"p{FLAGS.latency_percentile:g} <= {FLAGS.latency_bound}"
    say(
        f"tune {model} for serving on {host.describe()}: the most queries/sec LoadGen's Server "
        f"scenario judges VALID at {bound}, budget {opts.budget_seconds / 60:g} min\n"
        f"searching: batch size ({'/'.join(map(str, opts.batches))}), batching window "
        f"({'/'.join(f'{w:g}ms' for w in opts.windows_ms)})\n"
        f"trial records: {records_dir}"
    )
    runner = trials.Runner(tune_id, base, records_dir, work_dir, say, command="infer")
    result = serving.Search(opts, runner, say).run()
    ranked = serving.rows(result)
    say(_table(ranked, bound, result.winner))
    for note in result.notes:
        say(f"note: {note}")
    answer = serving.answer(result)
    say(f"answer: {answer}")
    win = next(r for r in ranked if r["point"] == result.winner)
    if win["qps"] is None:
        raise errors.UsageError(f"no point served VALID at {bound}; see the table above")
    flags_path = os.path.join(work_dir, "winner-serving.flags")
    comment = (
        f"# tpubench tune winner for serving at {bound} on {host.describe()}: {win['name']}, "
        f"{fmt.num(win['qps'])} QPS VALID (median of {win['n']})\n# answer: {answer}\n"
    )
    lines = command.flags_argv({**base, **result.winner.flags()})
    disk_full.write(flags_path, comment + "\n".join(lines) + "\n", records_dir)
    say(
        f"winner (serving): {win['name']}: {fmt.num(win['qps'])} QPS at {bound}; serve with: "
        f"tpubench infer --flagfile={flags_path}; price a load with: tpubench advise "
        f"--model={model} --qps=N --latency_bound={FLAGS.latency_bound} {records_dir}"
    )
    doc = {
        "kind": "tune_summary",
        "objective": "serving",
        "host": host.describe(),
        "latency_bound": FLAGS.latency_bound,
        "latency_percentile": FLAGS.latency_percentile,
        "answer": answer,
        "decided": bool(result.verdict and serving.settled(result.verdict.ratio)),
        # Records by file name: advise finds them in the tune's directory, wherever it is.
        "winner": {
            **_plain(win),
            "records": [os.path.basename(p) for p in win["records"]],
            "setting": result.winner.flags(),
        },
        "ranked": [_plain(r) for r in ranked],
        "notes": result.notes,
        "flagfiles": {"serving": flags_path},
        "spent_seconds": round(result.spent_seconds, 1),
    }
    disk_full.write(os.path.join(work_dir, SUMMARY), json.dumps(doc, indent=2) + "\n", records_dir)
    return 0


def _plain(row: dict) -> dict:
    return {k: v for k, v in row.items() if k != "point"}


def _table(ranked: list[dict], bound: str, winner) -> str:
    t = Table(
        title=f"tune: serving points at {bound}, the answer first, then by median VALID QPS",
        title_justify="left",
    )
    for col in ("#", "point", "QPS (median)", "spread (min-max, n)", "status"):
        t.add_column(col, overflow="fold")
    notes = []
    for i, r in enumerate(ranked, 1):
        spread = f"{fmt.num(r['low'])}-{fmt.num(r['high'])} (n={r['n']})" if r["qps"] else ""
        status = r["status"]
        if r["note"]:  # below the table, as train's tune: beside it a reason folds into a column
            notes.append(f"[{len(notes) + 1}] {r['name']}: {safe_text.shown(r['note'], None)}")
            status += f" [{len(notes)}]"
        if r["point"] == winner:
            status = "winner, " + status
        t.add_row(str(i) if r["qps"] else "-", r["name"], fmt.num(r["qps"]), spread, status)
    buf = io.StringIO()
    width = columns.width()
    Console(file=buf, width=width, force_terminal=False, color_system=None).print(t)
    folded = [columns.fold(n, width) for n in notes]
    return "\n".join([buf.getvalue().rstrip(), *folded])
