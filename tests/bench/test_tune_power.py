"""bench/tune_power.py: tune's own decision code on simulated tunes, three rules side by side."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import tune_power  # noqa: E402


def test_it_prints_a_row_per_rule_and_the_plan_beats_the_old_split(capsys):
    assert tune_power.main(["--tunes=400", "--noise=0.1", "--gains=1.0,1.3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("looks after rounds 3..10 (8); each look before the last at 3.29")
    rows = [line.split(" | ") for line in out if line.startswith("| 10%")]
    assert [(r[1], r[2]) for r in rows] == [
        (gain, rule)
        for gain in ("1x", "1.3x")
        for rule in ("tune's plan", "one test after the last round", "Bonferroni")
    ]
    share = {(r[1], r[2]): float(r[3].rstrip("%")) + float(r[4].rstrip("%")) for r in rows}
    assert share[("1x", "tune's plan")] <= 8.0  # 400 tied tunes: ~4.8% expected
    # A real 30% gain at 10% noise: the plan about as often as one test, more than the split.
    plan, once = share[("1.3x", "tune's plan")], share[("1.3x", "one test after the last round")]
    assert plan >= 95.0 and once - plan <= 2.0 and plan >= share[("1.3x", "Bonferroni")]
