"""The latency-QPS-cost chart of server-scenario records (matplotlib, Agg).

Every LoadGen run of a server search and its confirmation is one point:
latency at the bound's percentile over offered QPS (top), and $ per
million predictions at that QPS (bottom).  The bound is a dashed line, the
VALID region (up to the confirmed QPS, under the bound) is shaded, VALID
points are filled, INVALID ones hollow, confirmation runs are stars.  The
latency axis stops at CLIP times the bound (or the median latency): a run
far beyond it (one 2,400 ms probe) is drawn as a triangle on the top edge
with its latency written beside it, so it cannot flatten the other points.
"""

from __future__ import annotations

from tpubench.report import group as group_lib
from tpubench.report import plots


def curves(groups: list[group_lib.Group]) -> list[dict]:
    """One entry per server configuration whose records carry a curve."""
    out = []
    for g in groups:
        served = [r.serving for r in g.runs if r.serving and r.serving.get("curve")]
        if not served or not served[0].get("bounded_by_latency"):
            continue
        points = sorted((p for s in served for p in s["curve"]), key=lambda p: p["qps"])
        confirmed = [r.examples_per_sec for r in g.runs if r.serving]
        out.append(
            {
                "label": g.label,
                "bound_seconds": served[0].get("latency_bound"),
                "percentile": served[0].get("latency_percentile") or 99.0,
                "confirmed_qps": max(confirmed) if confirmed else None,
                "points": points,
            }
        )
    return out


CLIP = 6  # the latency axis reaches at most this many bounds (medians where there is none)


def _latency_top(series: list[dict]) -> float | None:
    """The latency axis' top in ms where some run lies beyond CLIP bounds, else None."""
    ms = sorted(
        p["latency_seconds"] * 1e3
        for c in series
        for p in c["points"]
        if p["latency_seconds"] is not None
    )
    bounds = [c["bound_seconds"] * 1e3 for c in series if c["bound_seconds"]]
    if not ms:
        return None
    top = CLIP * (max(bounds) if bounds else ms[len(ms) // 2])
    return top if ms[-1] > top else None


def chart(series: list[dict], price_note: str):
    """(figure, series) of the curves: latency over QPS above, $/1M over QPS below."""
    fig, (lat, usd) = plots._subplots(2, 1, (8.5, 7.0), sharex=True)
    top = _latency_top(series)
    for i, c in enumerate(series):
        color = plots._COLORS[i % len(plots._COLORS)]
        # An overloaded run has no latency (its queries were shed): the cost panel only.
        pts = [p for p in c["points"] if p["latency_seconds"] is not None]
        ms = [p["latency_seconds"] * 1e3 for p in pts]
        shown = [y if top is None else min(y, top) for y in ms]  # a clipped run: on the edge
        search = [(p["qps"], y) for p, y in zip(pts, shown, strict=True) if not p["confirmation"]]
        if search:
            lat.plot(*zip(*search, strict=True), color=color, lw=1, alpha=0.6, label=c["label"])
        for p, y in zip(pts, ms, strict=True):
            marker = "*" if p["confirmation"] else "o"
            face = color if p["valid"] else "none"
            if top is not None and y > top:  # on the top edge, its latency written beside it
                lat.scatter([p["qps"]], [top], marker="^", s=70, facecolors=face, edgecolors=color)
                lat.annotate(
                    f"{y:,.0f} ms",
                    (p["qps"], top),
                    xytext=(-6, -4),
                    textcoords="offset points",
                    ha="right",
                    va="top",
                    fontsize=8,
                    color=color,
                )
                continue
            lat.scatter([p["qps"]], [y], marker=marker, s=70, facecolors=face, edgecolors=color)
        if c["bound_seconds"]:
            bound = c["bound_seconds"] * 1e3
            lat.axhline(bound, color=color, ls="--", lw=1)
            if c["confirmed_qps"]:
                lat.fill_between([0, c["confirmed_qps"]], 0, bound, color=color, alpha=0.08)
                lat.annotate(
                    f"VALID up to {c['confirmed_qps']:,.0f} QPS at p{c['percentile']:g} <= "
                    f"{bound:g} ms",
                    (0, bound),
                    xytext=(4, 4),
                    textcoords="offset points",
                    ha="left",
                    fontsize=8,
                    color=color,
                )
        pts = c["points"]
        priced = [p for p in pts if p["usd_per_million"] and not p["confirmation"]]
        if priced:
            usd.plot(
                [p["qps"] for p in priced],
                [p["usd_per_million"] for p in priced],
                color=color,
                lw=1,
            )
        for p in (p for p in pts if p["usd_per_million"]):
            marker = "*" if p["confirmation"] else "o"
            face = color if p["valid"] else "none"
            usd.scatter(
                [p["qps"]],
                [p["usd_per_million"]],
                marker=marker,
                s=50,
                facecolors=face,
                edgecolors=color,
            )
    pct = "/".join(sorted({f"p{c['percentile']:g}" for c in series}))
    lat.set_ylabel(f"latency {pct} (ms, LoadGen)")
    lat.set_xlim(left=0)
    lat.set_ylim(bottom=0, top=None if top is None else top * 1.04)
    lat.legend(fontsize=8, loc="upper left")
    lat.set_title(
        "Serving: latency-QPS-cost curve\n(filled: VALID, hollow: INVALID, star: confirmation run; "
        "dashed: the bound; shaded: the VALID region"
        + (f"; triangle: beyond {top:,.0f} ms, its latency written)" if top else ")"),
        fontsize=9,
    )
    usd.set_xlabel("offered load (queries/sec, LoadGen's scheduled QPS)")
    usd.set_ylabel("$ per 1M predictions")
    usd.set_ylim(bottom=0)
    fig.tight_layout()
    return fig, series
