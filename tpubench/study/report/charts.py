"""A study's charts, one per part, in the form its report takes (forms.py: one function each).

Built like the report's charts (a bare matplotlib Figure, the plotted series
embedded in the PNG by `plots.save`); published figures are drawn apart,
hatched or dotted and named "published: ...".
"""

from __future__ import annotations

import os
import sys

from tpubench.report import plots
from tpubench.report import published as published_lib
from tpubench.study.report import bands, forms, tables
from tpubench.study.spec import data_bench, published


def _fig(results, title: str, ylabel: str, log: bool = False):
    fig, ax = plots._subplots(1, 1, (8, 4.5))
    ax.set_title(f"{results.study.name} · {title}{_scale_note(results)}", fontsize=10)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.grid(True, axis="y", alpha=0.3)
    return fig, ax


BUSY_LABEL = "busy host: measured while other processes used its cores (figure low)"


def _bars(
    ax,
    groups: list[str],
    series: dict,
    hatch: set = frozenset(),
    ci: dict | None = None,
    busy: dict | None = None,
) -> None:
    """Grouped bars: one group per entry of GROUPS, one bar per series.

    CI ({series: {group: (low, high)}}) draws each bar's 95% interval as a whisker;
    BUSY ({series: {group, ...}}) cross-hatches the bars of runs on a busy host,
    with a legend entry that says so.
    """
    n = max(len(series), 1)
    width = 0.8 / n
    for i, (name, values) in enumerate(series.items()):
        xs = [g + (i - (n - 1) / 2) * width for g in range(len(groups))]
        ys = [values.get(g, 0) or 0 for g in groups]
        spans = [(ci or {}).get(name, {}).get(g) for g in groups]
        yerr = None
        if any(spans):
            yerr = [
                [y - max(s[0], 0) if s else 0 for y, s in zip(ys, spans, strict=True)],
                [s[1] - y if s else 0 for y, s in zip(ys, spans, strict=True)],
            ]
        drawn = ax.bar(
            xs,
            ys,
            width,
            label=name,
            hatch="//" if name in hatch else None,
            color=plots._COLORS[i % len(plots._COLORS)],
            yerr=yerr,
            capsize=3 if yerr else 0,
        )
        for g, patch in zip(groups, drawn.patches, strict=True):
            if g in (busy or {}).get(name, ()):
                patch.set_hatch("xx")
                patch.set_edgecolor("black")
    if any((busy or {}).values()):
        ax.bar([], [], color="white", edgecolor="black", hatch="xx", label=BUSY_LABEL)
    # Wide enough that slanted group names never run into each other (a figure per part).
    ax.figure.set_figwidth(max(ax.figure.get_figwidth(), 1.5 + 0.4 * len(groups)))
    ax.set_xticks(range(len(groups)), groups, rotation=30, ha="right", fontsize=8)
    ax.legend(fontsize=7)


def relative(results, part):
    ms = results.of(part.name)
    models = list(dict.fromkeys(m.cell.model.model for m in ms))
    base_label = results.study.form.get("baseline")
    fig, axes = plots._subplots(1, 2, (11, 4.5))
    series: dict = {"time": {}, "cost": {}}
    busy: dict = {}
    for model in models:
        by = {m.cell.setup.label: m for m in ms if m.cell.model.model == model}
        base = by.get(base_label) or next(iter(by.values()))
        for label, m in by.items():
            if m.busy or base.busy:  # a ratio to a busy figure is off too
                busy.setdefault(label, set()).add(model)
            series["time"].setdefault(label, {})[model] = base.rate / m.rate
            if m.usd_epoch and base.usd_epoch:
                series["cost"].setdefault(label, {})[model] = m.usd_epoch / base.usd_epoch
    for ax, key in zip(axes, ("time", "cost"), strict=True):
        _bars(ax, models, series[key], busy=busy)
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_ylabel(f"training {key} per epoch / baseline's (x)")
        ax.set_title(f"{key} per epoch, relative", fontsize=10)
    fig.suptitle(
        f"{results.study.name}{_scale_note(results)}: baseline {base_label} where measured, "
        "else the first measured setup",
        fontsize=9,
    )
    return fig, series


def _scale_note(results) -> str:
    return " (--scale=smoke: tiny models, not comparable)" if results.scale == "smoke" else ""


def devices(results, part):
    ms = results.of(part.name)
    models = list(dict.fromkeys(m.cell.model.model for m in ms))
    series: dict = {}
    ci: dict = {}
    busy: dict = {}
    for m in ms:
        series.setdefault(m.cell.setup.label, {})[m.cell.model.model] = m.rate
        if m.busy:
            busy.setdefault(m.cell.setup.label, set()).add(m.cell.model.model)
        if m.rate_ci:
            ci.setdefault(m.cell.setup.label, {})[m.cell.model.model] = m.rate_ci
    pub = set()
    for f in published.rows(results.study):
        ours = next((k for k, v in published.NAMES.items() if v == f.model), None)
        if ours in models:
            name = f"published: {f.hardware}"
            series.setdefault(name, {})[ours] = f.examples_per_sec
            pub.add(name)
    rates = [v for values in series.values() for v in values.values() if v]
    # A log axis only where the rates span orders of magnitude (GPU vs CPU);
    # else bars from zero, so their heights compare as the rates do.
    wide = bool(rates) and max(rates) > 20 * min(rates)
    unit = "predictions/s (serving)" if part.command == "infer" else "examples/s"
    what = f"{unit} by setup" if part.command == data_bench.COMMAND else f"{unit} per device"
    fig, ax = _fig(results, f"{part.name}: {what} (95% interval)", unit, wide)
    _bars(ax, models, series, pub, None if wide else ci, busy)  # whiskers on a linear axis
    if not wide:
        ax.set_ylim(bottom=0)
    return fig, series


def knee(results, part):
    if not tables.by_vcpus(part):  # setups that differ in the disk, not the vCPUs: bars
        return devices(results, part)
    fig, ax = _fig(
        results,
        f"{part.name}: {'serving' if part.command == 'infer' else 'training'} rate by host vCPUs",
        "predictions/s" if part.command == "infer" else "examples/s",
    )
    series: dict = {}
    for m in results.of(part.name):
        if m.cell.setup.vcpus:
            key = f"{m.cell.model.model} · {m.cell.data} · {m.accelerator}"
            series.setdefault(key, {})[m.cell.setup.vcpus] = m.rate
    for i, (name, points) in enumerate(series.items()):
        xs = sorted(points)
        ax.plot(xs, [points[x] for x in xs], "o-", label=name, color=plots._COLORS[i % 10])
    ax.set_xlabel("host vCPUs (pinned cores and thread pools)")
    ax.set_xscale("log", base=2)
    ax.set_ylim(bottom=0)  # a rate axis from zero: the knee's size stays honest
    ticks = sorted({x for points in series.values() for x in points})
    ax.set_xticks(ticks, [str(x) for x in ticks])
    ax.legend(fontsize=7)
    return fig, {k: {str(x): y for x, y in v.items()} for k, v in series.items()}


def scaling(results, part):
    fig, ax = _fig(results, f"{part.name}: images/s by device count", "images/s", True)
    series: dict = {}
    for m in results.of(part.name):
        key = f"{m.cell.model.model} · {m.cell.data} · {m.cell.device(results.host)}"
        series.setdefault(key, {})[m.cell.setup.devices] = m.rate
    i = 0
    for i, (name, points) in enumerate(series.items()):
        xs = sorted(points)
        color = plots._COLORS[i % 10]
        ax.plot(xs, [points[x] for x in xs], "o-", label=name, color=color)
        if len(xs) > 1:
            ax.plot(xs, [points[xs[0]] * x / xs[0] for x in xs], "--", color=color, alpha=0.5)
    models = {m.cell.model.model for m in results.of(part.name)}
    wanted = {published.NAMES.get(m) for m in models}
    figs = [f for f in published.rows(results.study) if f.model in wanted]
    for j, s in enumerate(published_lib.scaling(figs)):
        ax.plot(
            s.counts, s.rates, ":", marker="x", label=s.name, color=plots._COLORS[(i + j + 1) % 10]
        )
        series[s.name] = dict(zip(s.counts, s.rates, strict=True))
    ax.set_xlabel("devices (dashed: ideal from the fewest measured)")
    # Beside the axes: inside, a long legend covers the lines and the axis label.
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig, {k: {str(x): y for x, y in v.items()} for k, v in series.items()}


def strategies(results, part):
    ms = results.of(part.name)
    series: dict = {}
    groups = []
    for m in ms:
        group = f"{m.cell.model.model} · {m.cell.setup.devices} {m.cell.device(results.host)}"
        groups.append(group)
        how = bands.method(m.cell.setup) or "one device"
        series.setdefault(how, {})[group] = m.rate
    groups = list(dict.fromkeys(groups))
    rates = [v for values in series.values() for v in values.values() if v]
    wide = bool(rates) and max(rates) > 20 * min(rates)  # as devices: else bars from zero
    fig, ax = _fig(results, f"{part.name}: examples/s by gradient method", "examples/s", wide)
    _bars(ax, groups, series)
    if not wide:
        ax.set_ylim(bottom=0)
    return fig, series


def write(results, out_dir: str) -> list[str]:
    """One PNG per part with measured cells; returns their paths."""
    paths = []
    for part in results.study.parts:
        if not results.of(part.name):
            continue
        fig, series = forms.drawer(sys.modules[__name__], results.study.form["kind"])(results, part)
        path = os.path.join(out_dir, f"{results.study.name}-{part.name}-{results.scale}.png")
        paths.append(plots.save(fig, path, series))
    return paths
