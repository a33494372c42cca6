"""The report's charts (matplotlib, Agg backend: no display needed).

Each builder draws one figure from compare.py's structures and returns it
with the series it plotted; `save` writes the PNG with that series embedded
as PNG text ("tpubench:series", JSON), so a chart can be traced back to its
numbers.  Axes name their units; cost axes name the price date.
"""

from __future__ import annotations

import io
import json

import matplotlib
from matplotlib.figure import Figure

from tpubench import files
from tpubench.cost import money
from tpubench.report import compare, published, render

_DPI = 110
_COLORS = matplotlib.colormaps["tab10"].colors


def _subplots(nrows: int, ncols: int, figsize, **kw):
    # A bare Figure (no pyplot): no global state, no display, Agg when saved.
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(nrows, ncols, **kw)


def _strip_model(label: str, model: str) -> str:
    rest = label[len(model) + 3 :] if label.startswith(model + " · ") else label
    return rest or model


def prices_note(summaries: list[compare.Summary]) -> str:
    dates = sorted({d for s in summaries for d in s.price_dates})
    pricing = sorted({s.pricing for s in summaries if s.pricing != "n/a"})
    if not dates:
        return "no prices recorded"
    from tpubench.cost import catalog

    return f"{'/'.join(pricing)} {catalog.age_note(dates)}"


def throughput(summaries: list[compare.Summary]):
    """Horizontal bars of median examples/sec with interval whiskers, one panel per model."""
    models = list(dict.fromkeys(s.group.model for s in summaries))
    heights = [sum(s.group.model == m for s in summaries) for m in models]
    fig, axes = _subplots(
        len(models),
        1,
        (8.5, 1.2 + 0.45 * sum(heights) + 0.6 * len(models)),
        gridspec_kw={"height_ratios": heights},
        squeeze=False,
    )
    series = []
    for ax, model in zip(axes[:, 0], models, strict=True):
        mine = [s for s in summaries if s.group.model == model]
        labels = [_strip_model(s.label, model) for s in mine]
        med = [s.rate.median for s in mine]
        err = [
            [s.rate.median - s.rate.low for s in mine],
            [s.rate.high - s.rate.median for s in mine],
        ]
        ax.barh(range(len(mine)), med, xerr=err, color=_COLORS[0], capsize=3, height=0.6)
        ax.set_yticks(range(len(mine)), labels)
        ax.invert_yaxis()
        for i, s in enumerate(mine):
            ax.annotate(
                f" {render.num(s.rate.median)}  (n={s.rate.n}"
                + (f", {_pct(s.rate.confidence)})" if s.rate.has_interval else ")"),
                (s.rate.high, i),
                va="center",
                fontsize=8,
            )
        ax.set_title(model, loc="left", fontsize=10)
        ax.set_xlim(0, max(s.rate.high for s in mine) * 1.3)
        ax.set_xlabel(f"examples/sec (median; whiskers: {interval_text(mine)})")
        series.append({"model": model, "labels": labels, "examples_per_sec": med})
    fig.suptitle("Training throughput per configuration")
    fig.tight_layout()
    return fig, series


def relative(rels: list[compare.Relative], note: str):
    """The CPU-vs-GPU study's two charts: time and cost relative to a baseline, per model."""
    models = list(dict.fromkeys(r.summary.group.model for r in rels))
    configs = list(
        dict.fromkeys(_strip_model(r.summary.label, r.summary.group.model) for r in rels)
    )
    color = {c: _COLORS[j % 10] for j, c in enumerate(configs)}
    fig, axes = _subplots(1, 2, (11, 4.8))
    series: dict = {"time": {}, "cost": {}}
    for ax, what in zip(axes, ("time", "cost"), strict=True):
        labelled = set()
        for i, model in enumerate(models):
            mine = [r for r in rels if r.summary.group.model == model]
            width = 0.8 / len(mine)
            series[what][model] = {}
            for j, r in enumerate(mine):
                value = getattr(r, what)
                if value is None:
                    continue
                config = _strip_model(r.summary.label, model)
                err = [[value - getattr(r, f"{what}_low")], [getattr(r, f"{what}_high") - value]]
                ax.bar(
                    i - 0.4 + width * (j + 0.5),
                    value,
                    width * 0.95,
                    yerr=err,
                    capsize=2,
                    color=color[config],
                    label=config if config not in labelled else "_nolegend_",
                )
                labelled.add(config)
                series[what][model][config] = value
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(models)), models)
        name = "training time" if what == "time" else "cost"
        ax.set_ylabel(f"{name} per example, × baseline (lower is better)")
    axes[0].set_title("Training time relative to the baseline")
    axes[1].set_title(f"Cost relative to the baseline\n({note})", fontsize=10)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(3, len(configs)), fontsize=8)
    baselines = sorted({_strip_model(r.baseline.label, r.baseline.group.model) for r in rels})
    fig.suptitle(f"Baseline (= 1): {'; '.join(baselines)}", fontsize=10)
    fig.tight_layout(rect=(0, 0.05 + 0.035 * ((len(configs) + 2) // 3), 1, 1))
    return fig, series


def scaling(series: list[compare.ScalingSeries], pub: list[published.Scaling]):
    """Throughput against the count with each series' ideal line (dashed), and efficiency
    in %; one row per count dimension, published series in a row of their own."""
    rows: dict[str, list[dict]] = {}
    for s in series:
        rows.setdefault(s.axis_label, []).append(
            {
                "name": s.name,
                "dim": s.dim,
                "counts": [p.count for p in s.points],
                "rates": [p.summary.rate.median for p in s.points],
                "low": [p.summary.rate.low for p in s.points],
                "high": [p.summary.rate.high for p in s.points],
                "ideal": [p.ideal for p in s.points],
                "efficiency": [p.efficiency for p in s.points],
                "published": False,
            }
        )
    for p in pub:
        rows.setdefault("devices (published)", []).append(
            {
                "name": p.name,
                "dim": "devices",
                "counts": list(p.counts),
                "rates": list(p.rates),
                "low": list(p.rates),
                "high": list(p.rates),
                "ideal": [p.rates[0] * c / p.counts[0] for c in p.counts],
                "efficiency": list(p.efficiency),
                "published": True,
            }
        )
    fig, axes = _subplots(len(rows), 2, (12, 4.2 * len(rows)), squeeze=False)
    colors = matplotlib.colormaps["tab20"].colors
    plotted = []
    for (axis, members), (ax, ax_eff) in zip(rows.items(), axes, strict=True):
        style = "-." if members[0]["published"] else "-"
        for k, d in enumerate(members):
            color = colors[(2 * k) % 20] if len(members) <= 10 else colors[k % 20]
            err = [
                [m - lo for m, lo in zip(d["rates"], d["low"], strict=True)],
                [hi - m for m, hi in zip(d["rates"], d["high"], strict=True)],
            ]
            ax.errorbar(
                d["counts"],
                d["rates"],
                yerr=err,
                marker="o",
                linestyle=style,
                color=color,
                capsize=3,
                label=d["name"],
            )
            # "_"-labels stay out of legends but name the lines for readers of the figure.
            ax.plot(
                d["counts"],
                d["ideal"],
                linestyle="--",
                color=color,
                alpha=0.5,
                label=f"_ideal {d['name']}",
            )
            ax_eff.plot(
                d["counts"],
                d["efficiency"],
                marker="o",
                linestyle=style,
                color=color,
                label=f"_efficiency {d['name']}",
            )
            plotted.append(d)
        counts = sorted({c for d in members for c in d["counts"]})
        for a in (ax, ax_eff):
            a.set_xscale("log", base=2)
            a.set_xticks(counts, [str(c) for c in counts])
            a.minorticks_off()
            a.set_xlabel(axis)
            a.grid(alpha=0.3)
        values = [v for d in members for v in d["rates"] + d["ideal"]]
        if max(values) > 10 * min(values):  # several models on one axis: log keeps them apart
            ax.set_yscale("log")
        ax.set_ylabel("examples/sec (median)")
        ax.set_title(f"Throughput against ideal (dashed), by {axis}", fontsize=10)
        ax_eff.axhline(100, color="black", linewidth=0.8)
        top = max(max(d["efficiency"]) for d in members)
        ax_eff.set_ylim(0, max(110, top + 10))
        ax_eff.set_ylabel("scaling efficiency (% of ideal)")
        ax_eff.set_title("Efficiency = examples/sec ÷ ideal", fontsize=10)
        handles, labels = ax.get_legend_handles_labels()
        ax_eff.legend(handles, labels, fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.tight_layout()
    return fig, plotted


def batches(series: list[compare.BatchSeries], note: str):
    """Throughput and cost per million examples against the batch size, one line per series."""
    fig, (ax, ax_cost) = _subplots(1, 2, (12, 4.4))
    plotted = []
    for k, b in enumerate(series):
        color = _COLORS[k % 10]
        rates = [s.rate.median for s in b.points]
        err = [
            [s.rate.median - s.rate.low for s in b.points],
            [s.rate.high - s.rate.median for s in b.points],
        ]
        ax.errorbar(b.batches, rates, yerr=err, marker="o", color=color, capsize=3, label=b.name)
        priced = [
            (n, s.usd_per_million.median)
            for n, s in zip(b.batches, b.points, strict=True)
            if s.usd_per_million
        ]
        ax_cost.plot([n for n, _ in priced], [u for _, u in priced], marker="o", color=color)
        plotted.append(
            {"name": b.name, "batches": b.batches, "rates": rates, "usd_per_million": priced}
        )
    batches_seen = sorted({n for b in series for n in b.batches})
    for a in (ax, ax_cost):
        a.set_xscale("log", base=2)
        a.set_xticks(batches_seen, [str(n) for n in batches_seen])
        a.minorticks_off()
        a.set_xlabel("global batch size")
        a.grid(alpha=0.3)
    ax.set_ylabel("examples/sec (median)")
    ax.set_title(f"Throughput over batch size\n(whiskers: {_level_text(series)})", fontsize=10)
    ax_cost.yaxis.set_major_formatter(_usd)
    ax_cost.set_ylabel("USD per million examples (median)")
    ax_cost.set_title(f"Cost per example over batch size\n({note})", fontsize=10)
    ax.legend(fontsize=7)
    fig.suptitle(
        "Throughput and cost per example by batch size (convergence to a target: see the table)",
        fontsize=10,
    )
    fig.tight_layout()
    return fig, plotted


def _level_text(series: list[compare.BatchSeries]) -> str:
    return interval_text([s for b in series for s in b.points])


def interval_text(summaries: list[compare.Summary]) -> str:
    """What the whiskers of SUMMARIES' rates are: '95% interval of the median over trials'."""
    confidences = sorted({s.rate.confidence for s in summaries if s.rate.has_interval})
    levels = list(dict.fromkeys(_pct(c) for c in confidences))
    single = " (none for single trials)" if any(not s.rate.has_interval for s in summaries) else ""
    if not levels:
        return "none, single trials"
    if len(levels) == 1:
        return f"{levels[0]} interval of the median over trials{single}"
    return f"{' to '.join((levels[0], levels[-1]))} intervals of the median over trials{single}"


def _pct(confidence: float) -> str:
    # As the tables print it: 96.9% from six trials up, 75% for the range of three.
    return f"{confidence:.1%}" if confidence >= 0.95 else f"{confidence:.0%}"


def _usd(value, _pos=None) -> str:
    """Axis ticks in the one money format of the tables ($0.0000185, never $1.85e-05)."""
    return money.usd(value)


# (unit, seconds per unit, used while the longest time is below): axes stay readable
_TIME_UNITS = (("s", 1, 7200), ("h", 3600, 172800), ("days", 86400, float("inf")))


def cost_time(front: dict[str, list[compare.ParetoPoint]], note: str):
    """Cost per epoch against time per epoch, Pareto front marked, one panel per model."""
    models = list(front)
    ncols = min(3, len(models))
    nrows = -(-len(models) // ncols)
    fig, axes = _subplots(nrows, ncols, (5.4 * ncols, 4.6 * nrows), squeeze=False)
    for ax in axes.flat[len(models) :]:
        ax.set_visible(False)
    plotted = []
    for ax, model in zip(axes.flat, models, strict=False):
        points = front[model]
        longest = max(p.seconds for p in points)
        unit, scale = next((u, k) for u, k, up_to in _TIME_UNITS if longest < up_to)
        on = [p for p in points if p.on_front]
        off = [p for p in points if not p.on_front]
        # The front as the boundary of what it dominates: right, then down.
        ax.plot(
            [p.seconds / scale for p in on],
            [p.usd for p in on],
            drawstyle="steps-post",
            color=_COLORS[3],
            zorder=1,
            label="Pareto front",
        )
        ax.scatter([p.seconds / scale for p in on], [p.usd for p in on], color=_COLORS[3], zorder=2)
        ax.scatter(
            [p.seconds / scale for p in off],
            [p.usd for p in off],
            facecolors="none",
            edgecolors=_COLORS[0],
            zorder=2,
            label="dominated",
        )
        middle = (min(p.seconds for p in points) + longest) / 2
        for p in points:
            right = p.seconds > middle
            ax.annotate(
                _strip_model(p.summary.label, model),
                (p.seconds / scale, p.usd),
                fontsize=7,
                xytext=(-5 if right else 5, 5),
                textcoords="offset points",
                ha="right" if right else "left",
            )
        ax.set_xlabel(f"time per epoch ({unit}, median)")
        ax.set_ylabel("cost per epoch (USD, median)")
        ax.yaxis.set_major_formatter(_usd)
        ax.set_title(model)
        ax.margins(0.2)
        ax.grid(alpha=0.3)
        plotted.append(
            {
                "model": model,
                "time_unit": unit,
                "seconds": [p.seconds for p in points],
                "usd": [p.usd for p in points],
                "front": [p.on_front for p in points],
            }
        )
    fig.suptitle(f"Cost against time per epoch ({note})", fontsize=10)
    handles = [h for ax in axes.flat for h in ax.get_legend_handles_labels()[0]]
    labels = [x for ax in axes.flat for x in ax.get_legend_handles_labels()[1]]
    keep = {label: h for h, label in zip(handles, labels, strict=True)}  # one per label
    fig.legend(list(keep.values()), list(keep), loc="lower center", ncol=2, fontsize=8)
    fig.tight_layout(rect=(0, 0.07 / nrows, 1, 1))
    return fig, plotted


def save(fig, path: str, series) -> str:
    """Writes FIG as a PNG at PATH with SERIES embedded as PNG text."""
    png = io.BytesIO()
    fig.savefig(
        png,
        format="png",
        dpi=_DPI,
        bbox_inches="tight",
        metadata={"Software": "tpubench", "tpubench:series": json.dumps(series)},
    )
    return files.write_atomic(path, png.getvalue())  # never through a planted symlink
