"""`tune --objective=serving`: its answer and its table, from fabricated trial outcomes (no TF).

The rounds' interval comes from decide.paired; what is checked here is what
the serving tune says of it: "not settled" when the interval says nothing
(one round, or two rounds far apart), "equivalent" only inside the margin,
and a table whose first row is the answer.
"""

from __future__ import annotations

import dataclasses

import pytest

from tpubench.cli import tune_serving
from tpubench.tune import decide, outcomes, serving

A, B, C = serving.Point(32, 8.0), serving.Point(32, 2.0), serving.Point(8, 0.5)


def _result(ratio, winner=A, other=B, reason="") -> serving.Result:
    verdict = decide.Verdict(winner.describe(), other.describe(), ratio, 0, reason)
    return serving.Result(verdict=verdict, winner=winner)


def test_two_rounds_far_apart_are_not_settled_and_no_interval_is_printed():
    # The user's case: n=2 and a t-interval (t=12.7) from 0.00 to 247,072.95.
    ratio = decide.paired([1564.1, 9085.7], [8663.9, 100.0])
    assert ratio.n == 2 and ratio.low < 0.01 and ratio.high > 1000
    assert not serving.settled(ratio)
    text = serving.answer(_result(ratio, reason="the budget ended"))
    assert text == (
        f"not settled: batch 32, window 8 ms served {ratio.ratio:.2f}x the QPS of batch 32, "
        "window 2 ms over n=2 paired round(s) (its 95% interval is too wide to tell; the "
        "budget ended)"
    )
    assert "interval 0.00" not in text


@pytest.mark.parametrize(
    "ratio, starts",
    [
        (decide.Ratio(1.4, None, None, 1), "not settled: batch 32, window 8 ms served 1.40x"),
        (decide.Ratio(1.4, 0.27, 7.37, 3), "not settled: "),  # holds 1, too wide for a tie
        (decide.Ratio(1.02, 0.95, 1.1, 5), "not settled: "),  # holds 1, beyond +/-5%
        (decide.Ratio(1.01, 0.97, 1.04, 5), "equivalent within ±5%: pick either of batch 32"),
        (decide.Ratio(1.25, 1.2, 1.31, 3), "batch 32, window 8 ms, 1.25x batch 32, window 2 ms"),
        (decide.Ratio(1.25, 0.0, 1.31, 3), "not settled: "),  # a low end at 0 is no bound
    ],
)
def test_the_answer_says_settled_only_when_the_interval_says_something(ratio, starts):
    text = serving.answer(_result(ratio))
    assert text.startswith(starts), text
    assert ("95% interval 1.20-1.31, n=3" in text) == serving.settled(ratio)
    if ratio.n == 1:
        assert "over n=1 paired round(s) (one round gives no interval)" in text


def _outcome(p, repeat, rate):
    status = "ok" if rate else "failed"
    return outcomes.Outcome(p, 0, repeat, status, batch=p.batch, rate=rate, reason="no QPS VALID")


def test_the_table_starts_with_the_answer_even_below_anothers_median():
    # The paired rounds chose A; over every trial B's median is higher (a busy round).
    got = [
        _outcome(A, 0, 8663.9),
        _outcome(B, 0, 6349.1),
        _outcome(C, 0, 2053.0),
        _outcome(B, 1, 9085.7),
        _outcome(A, 1, 4335.3),
        _outcome(A, 2, 6627.8),
        _outcome(B, 2, 9500.0),
        _outcome(serving.Point(128, 0.5), 0, None),
    ]
    result = serving.Result(outcomes=got, winner=A)
    rows = serving.rows(result)
    assert [r["point"] for r in rows] == [A, B, C, serving.Point(128, 0.5)]
    assert rows[0]["qps"] < rows[1]["qps"]
    table = tune_serving._table(rows, "p99 <= 50ms", A)
    first = next(line for line in table.splitlines() if "batch 32, window 8 ms" in line)
    assert first.split("│")[1].strip() == "1" and "winner, ok" in first
    assert "the answer first, then by median VALID QPS" in table


LONG = (
    "infer exited 1: LoadGen found no QPS VALID at p99 <= 50 ms: the smallest target, 100 QPS, "
    "ran at p99 2,400 ms (busy host: 1.6 of 2 cores used by other processes), then the "
    "budget ended before a lower target could run"
)


@pytest.mark.parametrize("cols", ["80", "100"])
def test_a_failed_point_is_one_row_with_its_reason_below_the_table(cols, monkeypatch):
    """Beside the table a long reason folds into a column of words (12 lines at 100 columns);
    the row says `failed [1]` and note [1] below the table holds the whole reason."""
    monkeypatch.setenv("COLUMNS", cols)
    bad = serving.Point(128, 0.5)
    got = [_outcome(A, 0, 8663.9), outcomes.Outcome(bad, 0, 0, "failed", reason=LONG)]
    rows = serving.rows(serving.Result(outcomes=got, winner=A))
    table = tune_serving._table(rows, "p99 <= 50ms", A)
    lines = table.splitlines()
    row = [line for line in lines if line.startswith("│") and "failed" in line]
    assert len(row) == 1 and "failed [1]" in row[0] and LONG[:20] not in table.split("└")[0]
    if cols == "100":  # one line per point: nothing of the reason folds into the table
        assert len([line for line in lines if line.startswith("│")]) == 2, table
    below = " ".join(lines[lines.index(next(x for x in lines if x.startswith("└"))) + 1 :])
    assert "[1] batch 128, window 0.5 ms: infer exited 1:" in below
    assert " ".join(LONG.split()) in " ".join(below.split())
    assert max(len(line.rstrip()) for line in lines) <= int(cols)


class _Tied:
    """A runner of two points that serve the same QPS, each run with 3% log-normal noise."""

    def __init__(self, rng, speedup=1.0):
        self.rng, self.speedup = rng, speedup

    def recorded(self, p, steps, repeat, attempt=0):
        return None

    def run(self, p, steps, repeat, attempt=0):
        base = 1000.0 * (self.speedup if p == A else 1.0)
        rate = base * self.rng.lognormvariate(0.0, 0.03)
        return outcomes.Outcome(p, 0, repeat, "ok", batch=p.batch, rate=rate, wall_seconds=1.0)


def _decided(speedup: float, tunes: int, seed: int) -> tuple[int, int]:
    """(tunes that named a winner, of them the truly faster A) over TUNES simulated tunes."""
    import random

    rng = random.Random(seed)
    opts = serving.Options(batches=(32,), windows_ms=(8.0, 2.0), budget_seconds=1e9)
    decided = right = 0
    for _ in range(tunes):
        result = serving.Search(opts, _Tied(rng, speedup), lambda _: None).run()
        if result.verdict.decided:
            decided += 1
            right += result.winner == A
    return decided, right


def test_repeated_looks_keep_the_serving_tunes_95_percent():
    """Looks after rounds 3 to 10 at a plain 95% call a tie a winner ~17% of the time;
    the serving rounds' planned looks (decide.Plan) keep it under 5%."""
    decided, _ = _decided(1.0, 2000, seed=7)
    assert decided / 2000 <= 0.05, decided
    found, right = _decided(1.10, 300, seed=8)  # a real 10% more QPS is still found
    assert found / 300 >= 0.9 and right == found, (found, right)


class _BusyFirst(_Tied):
    """A runs 1.3x B's QPS; A's first run at each repeat is on a busy host, at half its QPS."""

    def __init__(self, rng):
        super().__init__(rng, 1.3)
        self.ran = []

    def run(self, p, steps, repeat, attempt=0):
        o = super().run(p, steps, repeat, attempt)
        self.ran.append((p, repeat, attempt))
        if p == A and attempt == 0:
            busy = "other processes used 60% of the 2 cores"
            return dataclasses.replace(o, rate=o.rate / 2, busy=busy, attempt=attempt)
        return dataclasses.replace(o, attempt=attempt)


def test_a_busy_serving_trial_runs_again_and_is_not_ranked():
    import random

    said = []
    runner = _BusyFirst(random.Random(3))
    opts = serving.Options(batches=(32,), windows_ms=(8.0, 2.0), budget_seconds=1e9)
    result = serving.Search(opts, runner, said.append).run()
    # A's busy run (half its QPS) would have lost to B; run again, A wins on quiet runs.
    assert (A, 0, 1) in runner.ran and result.winner == A
    assert any(
        "busy host (other processes used 60% of the 2 cores): not compared" in s for s in said
    )
    assert all(not o.busy for o in result.outcomes)
