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
from matplotlib import patches, ticker
from matplotlib.figure import Figure

from tpubench.core import host_load, money
from tpubench.report import compare, render
from tpubench.storage import files

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
    from tpubench.core import money
    from tpubench.cost import catalog

    return f"{'/'.join(money.basis(p) for p in pricing)} {catalog.age_note(dates)}"


# Bars the throughput chart draws at most: past it, the fastest (every configuration is in
# the summary table), so a folder of thousands of configurations draws a readable chart in
# bounded time and memory.
MAX_BARS = 60


def drawn(summaries: list[compare.Summary]) -> list[compare.Summary]:
    """The configurations the throughput chart draws: all, or the MAX_BARS fastest (in order)."""
    if len(summaries) <= MAX_BARS:
        return list(summaries)
    fastest = sorted(range(len(summaries)), key=lambda i: -summaries[i].rate.median)
    keep = set(fastest[:MAX_BARS])
    return [s for i, s in enumerate(summaries) if i in keep]


def serving(summary: compare.Summary) -> bool:
    """Whether SUMMARY's runs served predictions (infer) rather than trained."""
    return summary.group.dims.get("kind", "train") != "train"


def doing(summaries: list) -> tuple[str, str, str]:
    """What SUMMARIES measured, for titles and axes: ("Training", "examples", "example"),
    ("Serving", "predictions", "prediction") or both, joined by "and" / "or"."""
    kinds = {serving(s) for s in summaries}
    if kinds == {True}:
        return "Serving", "predictions", "prediction"
    if kinds == {False, True}:
        return "Training and serving", "examples or predictions", "example or prediction"
    return "Training", "examples", "example"


def throughput(summaries: list[compare.Summary]):
    """Horizontal bars of median examples/sec (predictions/sec for infer runs) with interval
    whiskers, one panel per model (the MAX_BARS fastest configurations where there are more;
    the title says so, and whether the runs trained or served)."""
    total = len(summaries)
    work = doing(summaries)[0]
    summaries = drawn(summaries)
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
        bars = ax.barh(range(len(mine)), med, xerr=err, color=_COLORS[0], capsize=3, height=0.6)
        for bar, s in zip(bars.patches, mine, strict=True):
            if s.busy:  # measured while other processes took the host's cores: marked
                bar.set_hatch("xx")
                bar.set_edgecolor("black")
        ax.set_yticks(range(len(mine)), labels)
        ax.invert_yaxis()
        for i, s in enumerate(mine):
            # Clear of the whisker's cap: touching the label, a cap reads as a digit (a "1").
            ax.annotate(
                f"{render.num(s.rate.median)}  (n={s.rate.n}"
                + (f", {_pct(s.rate.confidence)}" if s.rate.has_interval else "")
                + (f", {s.busy} busy)" if s.busy else ")"),
                (s.rate.high, i),
                xytext=(LABEL_GAP_POINTS, 0),
                textcoords="offset points",
                va="center",
                fontsize=8,
            )
        ax.set_title(model, loc="left", fontsize=10)
        ax.set_xlim(0, max(s.rate.high for s in mine) * 1.3)
        unit = doing(mine)[1]
        ax.set_xlabel(f"{unit}/sec (median; whiskers: {interval_text(mine)})")
        busy = [s.busy for s in mine]
        series.append({"model": model, "labels": labels, "examples_per_sec": med, "busy": busy})
    title = f"{work} throughput per configuration"
    if total > len(summaries):  # one line: a second one runs into the first panel's title
        title = f"{work} throughput: the {len(summaries)} fastest of {total:,} configurations"
    fig.suptitle(title)
    bottom = 0.0
    if any(s.busy for s in summaries):  # under the panels, clear of every bar and label
        mark = patches.Patch(facecolor="white", edgecolor="black", hatch="xx", label=BUSY_LABEL)
        fig.legend(handles=[mark], loc="lower center", fontsize=7, frameon=False)
        bottom = 0.3 / fig.get_figheight()
    # A third of an inch at the top for the title, clear of the first panel's at any height.
    fig.tight_layout(rect=(0, bottom, 1, 1 - 0.3 / fig.get_figheight()))
    return fig, series


BUSY_LABEL = (
    f"N busy: N of its runs measured while other processes used over "
    f"{host_load.BUSY_PERCENT:.0f}% of the host's cores (figure low)"
)
LABEL_GAP_POINTS = 8  # between a whisker's cap (3 points wide) and a value label


def relative(rels: list[compare.Relative], note: str):
    """The CPU-vs-GPU study's two charts: time and cost relative to a baseline, per model."""
    models = list(dict.fromkeys(r.summary.group.model for r in rels))
    configs = list(
        dict.fromkeys(_strip_model(r.summary.label, r.summary.group.model) for r in rels)
    )
    color = {c: _COLORS[j % 10] for j, c in enumerate(configs)}
    work, _, unit = doing([r.summary for r in rels])
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
        name = f"{work.lower()} time" if what == "time" else "cost"
        ax.set_ylabel(f"{name} per {unit}, × baseline (lower is better)")
    axes[0].set_title(f"{work} time relative to the baseline")
    axes[1].set_title(f"Cost relative to the baseline\n({note})", fontsize=10)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(3, len(configs)), fontsize=8)
    baselines = sorted({_strip_model(r.baseline.label, r.baseline.group.model) for r in rels})
    fig.suptitle(f"Baseline (= 1): {'; '.join(baselines)}", fontsize=10)
    fig.tight_layout(rect=(0, 0.05 + 0.035 * ((len(configs) + 2) // 3), 1, 1))
    return fig, series


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


class _UsdTicks(ticker.Formatter):
    """Money ticks with the decimals their spacing needs: $0.0060, $0.0065, never
    $0.00600 beside $0.00650 (nor $1.85e-05); at least two decimals, as the tables."""

    def __call__(self, value, pos=None) -> str:
        if value == 0:
            return "$0"
        return f"{'-' if value < 0 else ''}${abs(value):,.{self._decimals()}f}"

    def _decimals(self) -> int:
        locs = sorted(float(x) for x in self.locs)
        step = min((b - a for a, b in zip(locs, locs[1:], strict=False) if b > a), default=0.0)
        if step <= 0:  # one tick: three significant digits, as money.usd
            text = money.usd(locs[0] if locs else 0.0)
            return len(text.split(".")[1]) if "." in text else 2
        for decimals in range(2, 13):
            if all(abs(round(x, decimals) - x) < step * 1e-3 for x in locs):
                return decimals
        return 12


def plain_log_axis(axis) -> None:
    """A log axis with ticks at 1, 2, 5 x 10^k written as plain numbers (6,000, not 6x10^3)."""
    axis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(ticker.FuncFormatter(_plain))
    axis.set_minor_formatter(ticker.NullFormatter())


def _plain(value, _pos=None) -> str:
    return f"{value:,.0f}" if value >= 1 else f"{value:.3g}"


# (unit, seconds per unit, used while the longest time is below): axes stay readable
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
