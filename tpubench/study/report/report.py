"""A study's report in the study's own form, beside its published figures.

The measured tables are the form's (study/report/tables.py, one function per
form of study/report/forms.py).  Published rows sit in their own labelled table and never enter a
measured figure.  A line that reads like a verdict (the cheapest machine,
what price would flip it, which basis moves it, the knee) waits for the
evidence a finding waits for (judge.gate: full scale, the study's repeats)
and says why it is not judged until then; from a busy host it is marked.
"""

from __future__ import annotations

import os

from tpubench.core import money
from tpubench.study.report import findings as findings_lib
from tpubench.study.report import forms, tables
from tpubench.study.run import plan, ran_on
from tpubench.study.spec import data_bench, published


def _published(study) -> list[str]:
    figs = published.rows(study)
    if not figs:
        return []
    counts = sorted({f.devices for f in figs})
    # A device of several chips (RiseML's v2-8) also per chip, to compare with per-chip rows.
    per_chip = any(f.chips_per_device > 1 for f in figs)
    series: dict = {}
    for f in figs:
        key = (f"published: {f.hardware}", f.model, f.data, str(f.batch_per_device), f.note)
        series.setdefault(key, {})[f.devices] = f
    rate = tables.rate
    rows = [
        [
            *key[:4],
            *[rate(v[n].examples_per_sec if n in v else None) for n in counts],
            *[rate(v[n].examples_per_sec_per_chip if n in v else None) for n in counts] * per_chip,
            key[4],
        ]
        for key, v in series.items()
    ]
    sources = ", ".join(dict.fromkeys(f.source for f in figs))
    out = [
        "## Published (labelled; never in a measured figure or mean)",
        "",
        f"examples/s by device count, as printed by {sources}.",
        "",
    ]
    header = ["hardware", "model", "data", "batch/device", *[f"{n} dev" for n in counts]]
    header += [f"{n} dev, per chip" for n in counts] * per_chip + ["note"]
    return out + tables.markdown(header, rows) + [""]


def render(results, charts: list[str]) -> str:
    """The report as Markdown: measured tables, published rows, findings, cells."""
    study = results.study
    lines = [
        f"# {study.name}: {study.title}",
        "",
        (f"Reruns: {study.source}. " if study.source else "")
        + f"Host: {results.host.describe()}. Scale: {results.scale}. "
        f"Records: {results.results_dir}.",
        "",
    ]
    if study.question:
        lines += [f"Question: {study.question}", ""]
    lines += ["## Measured (mean of each cell's ok runs; 95% interval in brackets)", ""]
    if results.pricing:
        lines += [f"Dollar figures on {money.prices_on(results.pricing)}.", ""]
    else:
        lines += [
            "Dollar figures on each setup's own basis, as the seed priced it (named beside "
            "each $/hour); `--pricing=on_demand` or `--pricing=spot` puts them all on one.",
            "",
        ]
    body = []
    for part in study.parts:
        table = forms.drawer(tables, study.form["kind"])(results, part, study.form)
        if table:
            body += [f"### {part.name} (`{data_bench.shown(part.command)}`)", "", *table]
    lines += body or ["No cell measured yet.", ""]
    lines += ran_on.section(results)  # what each setup ran on beside what it is priced as
    lines += _published(study)
    lines += ["## Findings", ""]
    lines += [v.line() for v in findings_lib.check_all(results)] + [""]
    lines += plan.cells_section(results)
    if charts:
        lines += [
            "## Charts",
            "",
            *[f"![{os.path.basename(p)}]({os.path.basename(p)})" for p in charts],
            "",
        ]
    return "\n".join(lines)
