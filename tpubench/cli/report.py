"""`tpubench report`: records in; tables, charts and one HTML page out.

`build` computes everything (tests read its structures and figures);
`write` puts the files in the output directory; `report_main` is what the
subcommand prints.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os

from absl import flags

from tpubench.cli import configs
from tpubench.cli import flag_groups as groups
from tpubench.core import columns, errors, safe_text
from tpubench.core.config import ReportConfig
from tpubench.report import (
    caveats,
    compare,
    load,
    published,
    relative_table,
    render,
    scaling_curves,
    series_tables,
    serving_table,
    tables,
)
from tpubench.report import group as group_lib
from tpubench.storage import files

FLAGS = flags.FLAGS

FORMATS = ("table", "markdown", "csv")


@dataclasses.dataclass
class Report:
    loaded: load.Loaded
    groups: list[group_lib.Group]
    summaries: list[compare.Summary]
    relative: list[compare.Relative]
    scaling: list[scaling_curves.ScalingSeries]
    batches: list[compare.BatchSeries]
    pareto: dict
    published: list[published.Figure]
    tables: dict[str, tables.Table]
    figures: dict  # name -> (matplotlib Figure, plotted series, caption)
    warnings: list[str]


def build(cfg: ReportConfig) -> Report:
    """Loads, groups, checks and computes every table and figure of the report."""
    loaded = load.load(list(cfg.inputs), cfg.pricing)
    pub = published.select(cfg.published)
    if not loaded.runs:
        reasons = "; ".join(f"{x.run_id or x.path}: {x.reason}" for x in loaded.excluded[:5])
        raise errors.UsageError(f"no ok runs to report in {', '.join(cfg.inputs)} ({reasons})")
    groups = group_lib.group(loaded.runs)
    notes = group_lib.check_comparable(groups, tuple(cfg.allow_mixed))
    summaries = [compare.summarize(g) for g in groups]
    baselines = (
        group_lib.select(groups, cfg.baseline)
        if cfg.baseline
        else compare.default_baselines(groups)
    )
    several = {m for m in baselines if sum(g.model == m for g in groups) > 1}
    rel = compare.relative(summaries, {m: g for m, g in baselines.items() if m in several})
    scale = scaling_curves.scaling(summaries)
    batch_series = compare.batches(summaries)
    front = compare.pareto(summaries)
    front = {m: p for m, p in front.items() if len(p) > 1}
    pub_scaling = published.scaling(pub)

    from tpubench.report import (  # matplotlib: only once the inputs are known good
        plots,
        series_plots,
    )

    t = {"summary": tables.summary(summaries, cfg.pricing)}
    figures = {}
    price_note = plots.prices_note(summaries)
    fig, series = plots.throughput(summaries)
    figures["throughput"] = (
        fig,
        series,
        f"Median {plots.doing(summaries)[1]}/sec per configuration; whiskers: "
        f"{plots.interval_text(summaries)} (confidence per row in the table)",
    )
    if rel:
        t["relative"] = relative_table.relative(rel)
        fig, series = plots.relative(rel, price_note)
        figures["relative"] = (
            fig,
            series,
            f"Time and cost per example relative to the baseline ({price_note})",
        )
    if scale or pub_scaling:
        t["scaling"] = series_tables.scaling(scale)
        fig, series = series_plots.scaling(scale, pub_scaling)
        figures["scaling"] = (
            fig,
            series,
            "Throughput against the ideal line and scaling efficiency",
        )
    if batch_series:
        t["batch"] = series_tables.batches(batch_series)
        fig, series = series_plots.batches(batch_series, price_note)
        figures["batch"] = (
            fig,
            series,
            f"Throughput and cost per example over batch size ({price_note})",
        )
    if front:
        t["pareto"] = series_tables.pareto(front)
        fig, series = series_plots.cost_time(front, price_note)
        figures["cost_time"] = (
            fig,
            series,
            f"Cost against time per epoch, Pareto front marked ({price_note})",
        )
    served = serving_table.table(groups, cfg.pricing)
    if served is not None:
        t["serving"] = served
    from tpubench.report import serving_plots

    curves = serving_plots.curves(groups)
    if curves:
        fig, series = serving_plots.chart(curves, price_note)
        figures["serving_curve"] = (
            fig,
            series,
            f"Server scenario: latency and $ per million predictions over QPS, every LoadGen "
            f"run a point ({price_note})",
        )
    if pub:
        t["published"] = series_tables.published_table(pub)
    if loaded.excluded:
        t["excluded"] = tables.excluded(loaded.excluded)
    return Report(
        loaded,
        groups,
        summaries,
        rel,
        scale,
        batch_series,
        front,
        pub,
        t,
        figures,
        caveats.lines(summaries, notes, loaded, cfg.pricing),
    )


def write(report: Report, output: str, title: str) -> list[str]:
    """Writes CSV, Markdown, PNG and HTML files into OUTPUT; returns their paths."""
    from tpubench.report import html, plots

    try:
        os.makedirs(output, exist_ok=True)
    except OSError as e:
        raise errors.UsageError(f"cannot create --output={output}: {e.strerror}") from None
    paths = []
    for t in report.tables.values():
        paths.append(_put(os.path.join(output, f"{t.name}.csv"), render.csv_text(t)))
    pngs = {}
    for name, (fig, series, _) in report.figures.items():
        pngs[name] = plots.save(fig, os.path.join(output, f"{name}.png"), series)
        paths.append(pngs[name])
    cell = safe_text.markdown_cell
    md = [f"# {cell(title, None)}", ""] + [f"- {cell(w, None)}" for w in report.warnings] + [""]
    for name, t in report.tables.items():
        fig_name = _FIGURE_OF.get(name)
        if fig_name in pngs:
            md += [f"![{cell(report.figures[fig_name][2], None)}]({fig_name}.png)", ""]
        md.append(render.markdown(t))
    paths.append(_put(os.path.join(output, "report.md"), "\n".join(md)))
    sections = [
        (t, (f, pngs[f], report.figures[f][2]) if (f := _FIGURE_OF.get(name)) in pngs else None)
        for name, t in report.tables.items()
    ]
    generated = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    page = html.page(title, sections, report.warnings, report.loaded.sources, generated)
    paths.append(_put(os.path.join(output, "report.html"), page))
    return paths


_FIGURE_OF = {
    "summary": "throughput",
    "relative": "relative",
    "scaling": "scaling",
    "batch": "batch",
    "serving": "serving_curve",
    "pareto": "cost_time",
}


def _put(path: str, text: str) -> str:
    # Temp file + rename inside --output: a symlink planted as report.html is
    # replaced, never written through.
    return files.write_atomic(path, text)


def report_main(cfg: ReportConfig) -> str:
    """Builds the report, writes files when --output is given; returns what to print."""
    if cfg.format not in FORMATS:
        raise errors.unknown("--format", cfg.format, FORMATS)
    report = build(cfg)
    if cfg.format == "csv":
        out = render.csv_text(report.tables["summary"])
    elif cfg.format == "markdown":
        out = "\n".join(render.markdown(t) for t in report.tables.values())
    else:
        out = "\n".join(render.terminal(t) for t in report.tables.values())
    if cfg.format != "csv" and report.warnings:
        # Notes quote configuration labels (record text): escaped as their format needs.
        safe = safe_text.markdown_cell if cfg.format == "markdown" else safe_text.shown
        out += "\n" + "\n".join(f"note: {safe(w, None)}" for w in report.warnings) + "\n"
    if cfg.output:
        paths = write(report, cfg.output, cfg.title)
        names = ", ".join(os.path.basename(p) for p in paths)
        out += f"\nwrote {os.path.join(cfg.output, 'report.html')} ({names})\n"
    elif cfg.format != "csv":
        out += "\n(pass --output=DIR for CSV, Markdown, PNG charts and an HTML page)\n"
    return out


def define():
    flags.DEFINE_string(
        "output", None, "Directory for CSV, Markdown, PNG charts and report.html (created)."
    )
    flags.DEFINE_string(
        "baseline",
        None,
        "Configuration that counts as 1 in the relative charts, per model: dim=value[,dim=value] "
        "(e.g. threads=1, machine=gcp:n1-standard-1) or a label; default: each model's first.",
    )
    flags.DEFINE_list("published", [], "Published figure sets to show beside the runs (or 'all').")
    flags.DEFINE_list(
        "allow_mixed",
        [],
        "Compare runs of one model that differ in network params anyway (params); batch_size "
        "and precision are configuration axes, compared by default.",
    )
    flags.DEFINE_enum("format", "table", ["table", "markdown", "csv"], "What the terminal shows.")
    flags.DEFINE_string("title", "tpubench report", "Title of report.md and report.html.")
    groups.define_basis()


def main(args: list[str], full_argv: list[str]) -> int:
    cfg = configs.report_config(args)
    text = safe_text.block(report_main(cfg))
    print(columns.fold(text) if cfg.format == "table" else text, end="")
    return 0
