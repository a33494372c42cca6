"""A study's report in the study's own form, beside its published figures.

Forms: `relative` (time and cost against a baseline machine, the CPU-vs-GPU
study's charts), `devices` ($/hour, examples/s and $/epoch per device, and per GPU or TPU chip),
`knee` (rate against host vCPUs), `scaling` (images/s per device count
against ideal) and `strategies` (rate per gradient method and device
count).  Published rows sit in their own labelled table and never enter a
measured figure.  A line that reads like a verdict (the cheapest machine,
what price would flip it, which basis moves it, the knee) waits for the
evidence a finding waits for (judge.gate: full scale, the study's repeats)
and says why it is not judged until then; from a busy host it is marked.
"""

from __future__ import annotations

import os

from tpubench.core import basis, durations, money
from tpubench.study import bands, data_bench, flips, plan, published, ran_on
from tpubench.study import findings as findings_lib
from tpubench.study import judge as J

FORMS = ("relative", "devices", "knee", "scaling", "strategies")


def _rate(x) -> str:
    if x is None:
        return "—"
    return f"{x:,.1f}" if x < 1000 else f"{x:,.0f}"


def _usd(x) -> str:
    return money.usd(x) if x is not None else "—"


def _rate_ci(m) -> str:
    """The mean rate with its 95% interval and a busy-host mark."""
    text = _rate(m.rate)
    if m.rate_ci:  # a rate is never below 0, whatever a wide interval says
        text += f" ({_rate(max(0.0, m.rate_ci[0]))}–{_rate(m.rate_ci[1])})"
    return text + (" ⚠busy" if m.busy else "")


def _basis(m) -> str:
    """The row's basis, or why it has none (its records hold no price on the report's)."""
    return money.basis(m.pricing) if m.pricing else "(no price on this basis)"


PINNED_NOTE = (
    "N-vCPU setups are N pinned cores of this one host, not separate VMs: they share its "
    "caches and memory bandwidth, so a real N-vCPU VM may run faster or slower."
)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


def _setups(results, part):
    """The part's setups that have a measured cell (keeps the file's order)."""
    seen = {m.cell.setup.label for m in results.of(part.name)}
    return [s for s in part.setups if s.label in seen]


def _relative(results, part, form) -> list[str]:
    out = []
    for item in part.models:
        ms = {m.cell.setup.label: m for m in results.of(part.name, model=item.model)}
        if not ms:
            continue
        base_label = form.get("baseline") if form.get("baseline") in ms else next(iter(ms))
        base = ms[base_label]
        out += [f"**{item.model}** (relative to {base_label})", ""]
        rows = []
        for label, m in ms.items():
            t = base.rate / m.rate
            c = m.usd_epoch / base.usd_epoch if m.usd_epoch and base.usd_epoch else None
            other = (m.pricing or basis.Basis.ON_DEMAND).other
            rows.append(
                [
                    label,
                    str(m.trials),
                    _rate_ci(m),
                    durations.figure(m.sec_epoch) if m.sec_epoch else "—",
                    f"{_usd(m.usd_hour)} {_basis(m)}",
                    _usd(m.usd_epoch),
                    _usd(flips.usd_epoch(m, other)) + f" {other.label}",
                    f"{t:.2f}x",
                    f"{c:.2f}x" if c else "—",
                ]
            )
        header = [
            "setup",
            "runs",
            "examples/s (95%)",
            "s/epoch",
            "$/hour (basis)",
            "$/epoch",
            "$/epoch, other basis",
            "time",
            "cost",
        ]
        out += _table(header, rows) + [""]
        lines = _cost_lines(results, ms)
        out += [f"- {x}" for x in lines] + ([""] if lines else [])
    if out and any(s.vcpus for s in part.setups):
        out += [PINNED_NOTE, ""]
    return out


def _cost_lines(results, ms: dict) -> list[str]:
    """The cost verdicts among MS (cheapest, what price would flip it, the price bases), or
    one line saying why they are not judged yet; a busy host's figures are marked."""
    basis = flips.basis_line(ms)
    lines = [*flips.flip_lines(ms), *([basis] if basis else [])]
    if not lines:
        return []
    busy = J.busy(ms.values())
    why = J.gate(results, list(ms.values()))
    if why:
        return [f"cost verdicts (cheapest, flip prices, price bases): {why}{busy}"]
    return [line + busy for line in lines]


def _precision(part) -> str:
    """What a row's precision is when no setup names one: none without a model step."""
    return "—" if part.command == data_bench.COMMAND else "fp32"


def _devices(results, part, _form) -> list[str]:
    measured = [
        (s, m) for s in _setups(results, part) for m in results.of(part.name, setup=s.label)
    ]
    # Accelerator machines also per GPU or TPU chip, so a v2-8 (4 chips) and a v5e-8 (8) compare.
    chips = any(m.chips for _, m in measured)
    rows = [
        [
            s.label,
            m.cell.model.model,
            str(m.batch or "default"),
            m.cell.model.precision or s.precision or _precision(part),
            _usd(m.usd_hour),
            _rate_ci(m),
            *(
                [str(m.chips or "—"), _rate(m.per_chip(m.rate)), _usd(m.per_chip(m.usd_hour))]
                * chips
            ),
            _usd(m.usd_epoch),
        ]
        for s, m in measured
    ]
    header = ["setup", "model", "global batch", "precision", "$/hour", "examples/s"]
    header += ["chips", "examples/s per chip", "$/chip-hour"] * chips + ["$/epoch"]
    return _table(header, rows) + [""] if rows else []


def by_vcpus(part) -> bool:
    """Whether PART's setups differ in vCPUs (a knee to show), not only in something else."""
    return len({s.vcpus for s in part.setups if s.vcpus}) > 1


def _knee(results, part, _form) -> list[str]:
    setups = [s for s in part.setups if s.vcpus]
    groups: dict = {}
    for m in results.of(part.name):
        groups.setdefault((m.cell.model.model, m.cell.data), {})[m.cell.setup.label] = m
    if not groups or not by_vcpus(part):
        return _devices(results, part, _form)
    capped = {
        (c.model.model, c.data, c.setup.label)
        for c in results.cells
        if c.part.name == part.name and c.id in results.capped
    }
    rows = []
    for (model, data), ms in groups.items():
        best = max(m.rate for m in ms.values())
        knee = next(
            (s.vcpus for s in setups if s.label in ms and ms[s.label].rate >= 0.95 * best), None
        )
        last = max(s.vcpus for s in setups if s.label in ms)
        knee = f"{knee}+ (still gaining)" if knee == last and len(ms) > 1 else knee
        # the knee is a verdict on the rates: none before they can carry one
        why = J.gate(results, list(ms.values()))
        knee = why or f"{knee}" + (" ⚠busy" if any(m.busy for m in ms.values()) else "")
        on = next(iter(ms.values())).accelerator
        rows.append(
            [
                f"{model} · {data} · {on}",
                *[
                    _rate_ci(ms[s.label])
                    if s.label in ms
                    else "died at its cap"
                    if (model, data, s.label) in capped
                    else "—"
                    for s in setups
                ],
                str(knee),
            ]
        )
    unit = "predictions/s" if part.command == "infer" else "examples/s"
    out = [
        f"{unit} by host vCPUs (mean of the runs, 95% interval); knee = fewest vCPUs within "
        "5% of the best",
        "",
    ]
    table = _table(["model · data · device", *[s.label for s in setups], "knee"], rows)
    return out + table + ["", PINNED_NOTE, ""]


def _scaling(results, part, _form) -> list[str]:
    setups = _setups(results, part)
    groups: dict = {}
    for m in results.of(part.name):
        groups.setdefault((m.cell.model.model, m.cell.data), {})[m.cell.setup.label] = m
    rows = []
    for (model, data), ms in groups.items():
        gpu = {
            ms[s.label].cell.setup.devices: ms[s.label]
            for s in setups
            if s.label in ms and s.device == "gpu"
        }
        eff = _of_ideal(gpu[min(gpu)], gpu[max(gpu)]) if len(gpu) >= 2 else ""
        rows.append(
            [
                f"{model} · {data}",
                *[_rate_ci(ms[s.label]) if s.label in ms else "—" for s in setups],
                eff or "—",
            ]
        )
    if not rows:
        return []
    return _table(["images/s", *[s.label for s in setups], "of ideal"], rows) + [""]


def _of_ideal(base, top) -> str:
    """'87% at 8 (81–95%)', or with 'not significant' when the interval (from both cells'
    intervals) holds 100% or either cell is one run: noise is not a result."""
    lo, hi = base.cell.setup.devices, top.cell.setup.devices
    ideal = hi / lo
    text = f"{100 * top.rate / (base.rate * ideal):.0f}% at {hi}"
    if not (base.rate_ci and top.rate_ci and base.rate_ci[0] > 0):
        return f"{text} (one run: not significant)"
    low = 100 * top.rate_ci[0] / (base.rate_ci[1] * ideal)
    high = 100 * top.rate_ci[1] / (base.rate_ci[0] * ideal)
    span = f"{max(0.0, low):.0f}–{high:.0f}%"
    return f"{text} ({span})" if not low <= 100 <= high else f"{text} ({span}: not significant)"


def _strategies(results, part, _form) -> list[str]:
    methods = list(dict.fromkeys(bands.method(s) for s in part.setups if bands.method(s)))
    groups: dict = {}
    for m in results.of(part.name):
        key = (m.cell.model.model, m.cell.device(results.host), m.cell.setup.devices)
        groups.setdefault(key, {})[bands.method(m.cell.setup) or "one device"] = m
    rows = [
        [
            model,
            f"{n} {device}",
            *[_rate_ci(ms[x]) if x in ms else "—" for x in ["one device", *methods]],
        ]
        for (model, device, n), ms in groups.items()
    ]
    if not rows:
        return []
    return _table(["model", "devices", "one device", *methods], rows) + [""]


_FORMS = {
    "relative": _relative,
    "devices": _devices,
    "knee": _knee,
    "scaling": _scaling,
    "strategies": _strategies,
}


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
    rows = [
        [
            *key[:4],
            *[_rate(v[n].examples_per_sec if n in v else None) for n in counts],
            *[_rate(v[n].examples_per_sec_per_chip if n in v else None) for n in counts] * per_chip,
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
    return out + _table(header, rows) + [""]


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
        table = _FORMS[study.form["kind"]](results, part, study.form)
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
