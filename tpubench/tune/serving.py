"""`tune --objective=serving`: the batch size and batching window that serve the most.

Pure Python.  A point is an infer batch size (the largest batch the server
SUT forms) and a batching window (how long a batch waits for more queries).
Each trial is a `tpubench infer --scenario=server` process: LoadGen's Server
scenario with Poisson arrivals, its QPS searched (bisection) for the highest
that LoadGen judges VALID at the latency bound; that QPS is the trial's
rate, and a point with no VALID QPS cannot serve at the bound.

The search: every batch size at the first window, then every window at the
best batch; then the two best points in rounds, back to back, until the
interval of their ratio excludes 1 (decide.py: looks planned from
`repeats` to `max_repeats`, so the 95% holds however many rounds are
looked at), `max_repeats` rounds, or the budget ends.
The search itself is the same as training's, smaller.  The answer
(`answer`) is "not settled" unless the interval says something, and the
ranked rows (`rows`) start with it.
"""

from __future__ import annotations

import dataclasses
import math
import statistics

from tpubench.core import errors
from tpubench.tune import decide, trials

WINDOWS_MS = (0.5, 2.0, 8.0)  # 2 ms: infer's default


@dataclasses.dataclass(frozen=True)
class Point:
    batch: int
    window_ms: float

    def flags(self) -> dict:
        """The infer flags of this point (closed-loop batches 1 and BATCH: the capacity)."""
        sizes = "1" if self.batch == 1 else f"1,{self.batch}"
        return {
            "batch_size": sizes,
            "max_batch_size": self.batch,
            "batching_window": f"{self.window_ms:g}ms",
        }

    def describe(self) -> str:
        return f"batch {self.batch}, window {self.window_ms:g} ms"


@dataclasses.dataclass(frozen=True)
class Options:
    batches: tuple[int, ...]
    windows_ms: tuple[float, ...]
    budget_seconds: float
    repeats: int = 3
    max_repeats: int = 10
    margin: float = 0.05  # --equivalence_margin


@dataclasses.dataclass
class Result:
    outcomes: list = dataclasses.field(default_factory=list)
    notes: list = dataclasses.field(default_factory=list)
    spent_seconds: float = 0.0
    verdict: decide.Verdict | None = None
    winner: Point | None = None


class Search:
    """RUNNER: trials.Runner(command="infer"); its outcomes' `rate` is the VALID QPS."""

    def __init__(self, opts: Options, runner, say):
        self.opts, self.runner, self.say = opts, runner, say
        self.result = Result()
        self.plan = decide.Plan.of(opts.repeats, opts.max_repeats, opts.margin)

    def trial(self, p: Point, repeat: int = 0, stage: str = "screen"):
        r = self.result
        found = [o for o in r.outcomes if (o.setting, o.repeat) == (p, repeat)]
        if found:
            return found[0]
        o = None
        for attempt in range(trials.BUSY_RERUNS + 1):
            got = self.runner.recorded(p, 0, repeat, attempt=attempt)
            if got is None:
                if (o or r.outcomes) and not self._fits(p):
                    if o is None:
                        r.notes.append(f"budget: {stage} {p.describe()} (#{repeat + 1}) not run")
                        return None
                    r.notes.append(f"busy host: {stage} {p.describe()} kept, marked: no budget")
                    break
                self.say(f"[{len(r.outcomes) + 1}] {stage}: {p.describe()} ...")
                got = self.runner.run(p, 0, repeat, attempt=attempt)
            r.spent_seconds += got.wall_seconds
            o = got
            if not o.busy or attempt == trials.BUSY_RERUNS:
                break
            # A QPS measured beside other work is lower than the machine serves: not ranked.
            self.say(
                f"[{len(r.outcomes) + 1}] {stage}: {p.describe()}: busy host ({o.busy}): "
                "not compared; running it again"
            )
        r.outcomes.append(o)
        self.say(f"[{len(r.outcomes)}] {stage}: {p.describe()}: {said(o)}")
        return o

    def _fits(self, p: Point) -> bool:
        return self.result.spent_seconds + self._estimate(p) <= self.opts.budget_seconds

    def _estimate(self, p: Point) -> float:
        done = [o.wall_seconds for o in self.result.outcomes if o.wall_seconds]
        like = [o.wall_seconds for o in self.result.outcomes if o.setting == p and o.wall_seconds]
        return statistics.median(like or done) if done else 0.0

    def run(self) -> Result:
        o = self.opts
        first = Point(o.batches[0], o.windows_ms[0])
        for b in o.batches:
            self.trial(Point(b, o.windows_ms[0]))
        best = self.leaders(1)
        if not best:
            self._nothing_valid()
        for w in o.windows_ms[1:]:
            self.trial(Point(best[0].batch, w))
        top = self.leaders(2)
        self._rounds(top)
        if self.result.winner is None:
            self.result.winner = top[0] if top else first
        return self.result

    def _rounds(self, top: list[Point]) -> None:
        r, n, stop = self.result, 1, ""  # round 0: the screening trials
        # The looks are planned before the first (self.plan, decide.Plan): one after each
        # round from --repeats to --max_repeats, so that together they keep 95%.
        while len(top) == 2 and not stop:
            if n >= self.opts.max_repeats:
                stop = f"{n} rounds run (--max_repeats)"
                break
            ratio = self._pair(top)
            if self.plan.settles(n, ratio):
                break
            for p in top[n % 2 :] + top[: n % 2]:
                if self.trial(p, n, "round") is None:
                    stop = "the budget ended"
            n += 1
        if len(top) < 2:
            name = top[0].describe() if top else "nothing"
            r.verdict = decide.Verdict(
                name, "", None, reason="one point served at the bound", margin=self.opts.margin
            )
            return
        ratio = self._pair(top)
        if ratio and ratio.ratio < 1:
            top, ratio = top[::-1], ratio.flipped()
        r.winner = top[0]
        why = stop if ratio and not ratio.decided else ""
        r.verdict = decide.Verdict(
            top[0].describe(), top[1].describe(), ratio, 0, why, self.opts.margin
        )

    def _pair(self, two: list[Point]) -> decide.Ratio | None:
        runs = [{o.repeat: o.rate for o in self.result.outcomes if o.setting == p} for p in two]
        both = sorted(n for n in set(runs[0]) & set(runs[1]) if runs[0][n] and runs[1][n])
        a, b = [runs[0][n] for n in both], [runs[1][n] for n in both]
        return self.plan.paired(a, b)

    def leaders(self, n: int) -> list[Point]:
        """The N points with the highest median VALID QPS, best first; a point's runs on a
        busy host count only where it has no quiet one."""
        by: dict = {}
        for o in sorted(self.result.outcomes, key=lambda o: bool(o.busy)):
            if o.status == "ok" and o.rate:
                if o.busy and by.get(o.setting):
                    continue
                by.setdefault(o.setting, []).append(o.rate)
        return sorted(by, key=lambda p: statistics.median(by[p]), reverse=True)[:n]

    def _nothing_valid(self):
        o = self.result.outcomes
        why = o[-1].reason if o else "no trial ran"
        raise errors.UsageError(
            f"no batch size served VALID at the bound ({', '.join(map(str, self.opts.batches))}): "
            f"{why}; accepted: a looser --latency_bound or other --batch_sizes"
        )


def said(o) -> str:
    if o.status == "ok":
        busy = f" (busy host: {o.busy}; marked)" if o.busy else ""
        return f"{o.rate:,.1f} QPS VALID{busy}" + (" [recorded earlier]" if o.reused else "")
    return f"{o.status}: {o.reason}" + (" [recorded earlier]" if o.reused else "")


def settled(ratio: decide.Ratio | None) -> bool:
    """RATIO's 95% interval is finite, above 0, and excludes 1: the order is known."""
    if ratio is None or ratio.low is None or ratio.high is None:
        return False
    if not (ratio.low > 0.0 and math.isfinite(ratio.high)):
        return False
    return ratio.low > 1.0 or ratio.high < 1.0


def answer(result: Result) -> str:
    """The serving tune's answer: the winner and how sure, never an interval that says nothing.

    Settled: 'A, 1.25x B (95% interval 1.20-1.31, n=3)'.  An interval inside
    the equivalence margin: 'equivalent within ±5%: pick either ...'.
    Otherwise (one round, or an interval too wide, e.g. 0.00-247072.95 from
    two rounds far apart): 'not settled', with the measured ratio and the
    number of paired rounds.
    """
    v = result.verdict
    if v is None:
        return ""
    r = v.ratio
    if r is None or settled(r) or v.equivalent:
        return v.text()
    why = f"; {v.reason}" if v.reason else ""
    short = "one round gives no interval" if r.n < 2 else "its 95% interval is too wide to tell"
    return (
        f"not settled: {v.winner} served {r.ratio:.2f}x the QPS of {v.other} over n={r.n} "
        f"paired round(s) ({short}{why})"
    )


def rows(result: Result) -> list[dict]:
    """One row per point: the answer (result.winner) first, then by median QPS; points with
    no VALID QPS last.  (The winner is chosen on the paired rounds, which may put it below
    another point's median over every trial.)"""
    by: dict = {}
    for o in result.outcomes:
        by.setdefault(o.setting, []).append(o)
    out = []
    for p, outs in by.items():
        rates = [o.rate for o in outs if o.status == "ok" and o.rate]
        missed = len(outs) - len(rates)
        note = f"{missed} of {len(outs)} run(s) found no VALID QPS" if rates and missed else ""
        out.append(
            {
                "point": p,
                "name": p.describe(),
                "n": len(rates),
                "qps": statistics.median(rates) if rates else None,
                "low": min(rates) if rates else None,
                "high": max(rates) if rates else None,
                "status": "ok" if rates else outs[-1].status,
                "note": note if rates else outs[-1].reason,
                "records": [o.record for o in outs if o.record and o.status == "ok"],
            }
        )
    won = [r for r in out if r["point"] == result.winner and r["qps"] is not None]
    rest = sorted((r for r in out if r not in won), key=lambda r: r["qps"] or -1.0, reverse=True)
    return won + rest
