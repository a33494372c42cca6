"""The measured tables of a study's report, one function per report form (study/report/forms.py).

Each form's function is named after it and gives its part's Markdown table:
`relative` (time and cost against a baseline machine), `devices` ($/hour,
examples/s and $/epoch per device, and per GPU or TPU chip), `knee` (rate
against host vCPUs), `scaling` (images/s per device count against ideal) and
`strategies` (rate per gradient method and device count).  A line that reads
like a verdict waits for the evidence a finding waits for (judge.gate).
"""

from __future__ import annotations

from tpubench.core import basis, durations, money, precision
from tpubench.study.report import bands, flips
from tpubench.study.report import judge as J
from tpubench.study.spec import data_bench


def rate(x) -> str:
    if x is None:
        return "—"
    return f"{x:,.1f}" if x < 1000 else f"{x:,.0f}"


def usd(x) -> str:
    return money.usd(x) if x is not None else "—"


def rate_ci(m) -> str:
    """The mean rate with its 95% interval and a busy-host mark."""
    text = rate(m.rate)
    if m.rate_ci:  # a rate is never below 0, whatever a wide interval says
        text += f" ({rate(max(0.0, m.rate_ci[0]))}–{rate(m.rate_ci[1])})"
    return text + (" ⚠busy" if m.busy else "")


def _basis(m) -> str:
    """The row's basis, or why it has none (its records hold no price on the report's)."""
    return money.basis(m.pricing) if m.pricing else "(no price on this basis)"


PINNED_NOTE = (
    "N-vCPU setups are N pinned cores of this one host, not separate VMs: they share its "
    "caches and memory bandwidth, so a real N-vCPU VM may run faster or slower."
)


def markdown(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


def _setups(results, part):
    """The part's setups that have a measured cell (keeps the file's order)."""
    seen = {m.cell.setup.label for m in results.of(part.name)}
    return [s for s in part.setups if s.label in seen]


def relative(results, part, form) -> list[str]:
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
                    rate_ci(m),
                    durations.figure(m.sec_epoch) if m.sec_epoch else "—",
                    f"{usd(m.usd_hour)} {_basis(m)}",
                    usd(m.usd_epoch),
                    usd(flips.usd_epoch(m, other)) + f" {other.label}",
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
        out += markdown(header, rows) + [""]
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
    return "—" if part.command == data_bench.COMMAND else precision.DEFAULT


def devices(results, part, _form) -> list[str]:
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
            usd(m.usd_hour),
            rate_ci(m),
            *([str(m.chips or "—"), rate(m.per_chip(m.rate)), usd(m.per_chip(m.usd_hour))] * chips),
            usd(m.usd_epoch),
        ]
        for s, m in measured
    ]
    header = ["setup", "model", "global batch", "precision", "$/hour", "examples/s"]
    header += ["chips", "examples/s per chip", "$/chip-hour"] * chips + ["$/epoch"]
    return markdown(header, rows) + [""] if rows else []


def by_vcpus(part) -> bool:
    """Whether PART's setups differ in vCPUs (a knee to show), not only in something else."""
    return len({s.vcpus for s in part.setups if s.vcpus}) > 1


def knee(results, part, _form) -> list[str]:
    setups = [s for s in part.setups if s.vcpus]
    groups: dict = {}
    for m in results.of(part.name):
        groups.setdefault((m.cell.model.model, m.cell.data), {})[m.cell.setup.label] = m
    if not groups or not by_vcpus(part):
        return devices(results, part, _form)
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
                    rate_ci(ms[s.label])
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
    table = markdown(["model · data · device", *[s.label for s in setups], "knee"], rows)
    return out + table + ["", PINNED_NOTE, ""]


def scaling(results, part, _form) -> list[str]:
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
                *[rate_ci(ms[s.label]) if s.label in ms else "—" for s in setups],
                eff or "—",
            ]
        )
    if not rows:
        return []
    return markdown(["images/s", *[s.label for s in setups], "of ideal"], rows) + [""]


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


def strategies(results, part, _form) -> list[str]:
    methods = list(dict.fromkeys(bands.method(s) for s in part.setups if bands.method(s)))
    groups: dict = {}
    for m in results.of(part.name):
        key = (m.cell.model.model, m.cell.device(results.host), m.cell.setup.devices)
        groups.setdefault(key, {})[bands.method(m.cell.setup) or "one device"] = m
    rows = [
        [
            model,
            f"{n} {device}",
            *[rate_ci(ms[x]) if x in ms else "—" for x in ["one device", *methods]],
        ]
        for (model, device, n), ms in groups.items()
    ]
    if not rows:
        return []
    return markdown(["model", "devices", "one device", *methods], rows) + [""]
