"""The report's series charts: scaling over devices, throughput over batch size,
cost against time (matplotlib, Agg backend), apart from plots.py's per-run charts."""

from __future__ import annotations

import matplotlib

from tpubench.report import compare, published, scaling_curves
from tpubench.report.plots import (
    _COLORS,
    _strip_model,
    _subplots,
    _UsdTicks,
    doing,
    interval_text,
    plain_log_axis,
)


def scaling(series: list[scaling_curves.ScalingSeries], pub: list[published.Scaling]):
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
                "efficiency_low": [_or(p.efficiency_low, p.efficiency) for p in s.points],
                "efficiency_high": [_or(p.efficiency_high, p.efficiency) for p in s.points],
                # The base point is 100% by definition; the others must leave 100% out.
                "significant": [p is s.points[0] or p.significant for p in s.points],
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
                "efficiency_low": list(p.efficiency),
                "efficiency_high": list(p.efficiency),
                "significant": [True] * len(p.counts),  # printed figures: not judged here
                "published": True,
            }
        )
    # What the whiskers of each measured row are (published rows are single figures).
    whiskers = {
        axis: interval_text([p.summary for s in series if s.axis_label == axis for p in s.points])
        for axis in {s.axis_label for s in series}
    }
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
            _efficiency(ax_eff, d, style, color)
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
            plain_log_axis(ax.yaxis)
        ax.set_ylabel("examples/sec (median)")
        note = f"\n(whiskers: {whiskers[axis]})" if axis in whiskers else ""
        ax.set_title(f"Throughput against ideal (dashed), by {axis}{note}", fontsize=10)
        ax_eff.axhline(100, color="black", linewidth=0.8)
        top = max(max(d["efficiency_high"]) for d in members)
        ax_eff.set_ylim(0, max(110, top + 10))
        ax_eff.set_ylabel("scaling efficiency (% of ideal)")
        ax_eff.set_title(
            "Efficiency = examples/sec ÷ ideal\n(hollow: not significant, its interval holds "
            "100% or it is one trial)",
            fontsize=10,
        )
        handles, labels = ax.get_legend_handles_labels()
        ax_eff.legend(handles, labels, fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.tight_layout()
    return fig, plotted


def _or(x, default):
    return default if x is None else x


def _efficiency(ax, d: dict, style: str, color) -> None:
    """One series' efficiencies with their intervals; a point whose interval holds 100% (or
    that has none) is hollow and labelled 'not significant' beside its value."""
    eff = d["efficiency"]
    err = [
        [e - lo for e, lo in zip(eff, d["efficiency_low"], strict=True)],
        [hi - e for e, hi in zip(eff, d["efficiency_high"], strict=True)],
    ]
    bars = ax.errorbar(d["counts"], eff, yerr=err, linestyle=style, color=color, capsize=3)
    bars.lines[0].set_label(f"_efficiency {d['name']}")
    for count, value, sure in zip(d["counts"], eff, d["significant"], strict=True):
        ax.plot([count], [value], "o", color=color, markerfacecolor=color if sure else "white")
        if not sure:
            ax.annotate(
                f"{value:.0f}%: not significant",
                (count, value),
                xytext=(8, 0),
                textcoords="offset points",
                va="center",
                fontsize=7,
                color=color,
            )


def batches(series: list[compare.BatchSeries], note: str):
    """Throughput and cost per million examples (predictions, for infer runs) against the
    batch size, one line per series; the titles say whether the runs trained or served."""
    work, units, unit = doing([s for b in series for s in b.points])
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
    ax.set_ylabel(f"{units}/sec (median)")
    ax.set_title(f"Throughput over batch size\n(whiskers: {_level_text(series)})", fontsize=10)
    ax_cost.yaxis.set_major_formatter(_UsdTicks())
    ax_cost.set_ylabel(f"USD per million {units} (median)")
    ax_cost.set_title(f"Cost per {unit} over batch size\n({note})", fontsize=10)
    ax.legend(fontsize=7)
    fig.suptitle(
        f"{work} throughput and cost per {unit} by batch size"
        + (" (convergence to a target: see the table)" if work == "Training" else ""),
        fontsize=10,
    )
    fig.tight_layout()
    return fig, plotted


def _level_text(series: list[compare.BatchSeries]) -> str:
    return interval_text([s for b in series for s in b.points])


_TIME_UNITS = (("s", 1, 7200), ("h", 3600, 172800), ("days", 86400, float("inf")))


def cost_time(front: dict[str, list[compare.ParetoPoint]], note: str):
    """Cost per epoch against time per epoch, Pareto front marked, one panel per model."""
    models = list(front)
    ncols = min(3, len(models))
    nrows = -(-len(models) // ncols)
    fig, axes = _subplots(nrows, ncols, (5.4 * ncols, 4.6 * nrows), squeeze=False)
    for ax in axes.flat[len(models) :]:
        ax.set_visible(False)
    plotted, notes = [], []
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
            notes.append(
                ax.annotate(
                    _strip_model(p.summary.label, model),
                    (p.seconds / scale, p.usd),
                    fontsize=7,
                    xytext=(-5 if right else 5, 5),
                    textcoords="offset points",
                    ha="right" if right else "left",
                )
            )
        ax.set_xlabel(f"time per epoch ({unit}, median)")
        ax.set_ylabel("cost per epoch (USD, median)")
        ax.yaxis.set_major_formatter(_UsdTicks())  # one per axis: it reads its ticks
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
    fig.suptitle(f"Training cost against time per epoch\n({note})", fontsize=10)
    handles = [h for ax in axes.flat for h in ax.get_legend_handles_labels()[0]]
    labels = [x for ax in axes.flat for x in ax.get_legend_handles_labels()[1]]
    keep = {label: h for h, label in zip(handles, labels, strict=True)}  # one per label
    fig.legend(list(keep.values()), list(keep), loc="lower center", ncol=2, fontsize=8)
    fig.tight_layout(rect=(0, 0.07 / nrows, 1, 1))
    _apart(fig, notes)
    return fig, plotted


def _apart(fig, notes: list) -> None:
    """Keeps point labels within their panel's width, and moves one that would run into an
    earlier one up, a line at a time, until it stands clear (configurations close in time and
    cost have close labels)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    placed: list = []
    for note in notes:
        box, inside = note.get_window_extent(renderer), note.axes.get_window_extent(renderer)
        # Within its panel's width: past the edge a name runs over the axis' numbers.
        shift = max(inside.x0 - box.x0, 0.0) - max(box.x1 - inside.x1, 0.0)
        if shift:
            x, y = note.xyann
            note.xyann = (x + shift * 72 / fig.dpi, y)
            box = note.get_window_extent(renderer)
        for _ in range(len(notes)):
            if not any(box.overlaps(other) for other in placed):
                break
            x, y = note.xyann
            note.xyann = (x, y + note.get_fontsize() * 1.3)
            box = note.get_window_extent(renderer)
        placed.append(box)
