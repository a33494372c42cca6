"""bench/dropout.py: both dropouts timed in alternating rounds, the empty step taken off."""

from __future__ import annotations

import pathlib
import re
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import dropout  # noqa: E402


def test_it_times_both_and_prints_the_ratio(capsys):
    assert dropout.main(["--shape=4,64", "--rounds=2", "--repeats=3", "--dtype=bfloat16"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("dropout 0.25 on 4x64 bfloat16, forward and backward, 2 rounds:")
    ms = r"-?\d+\.\d{3}"
    for name in ("tensorflow", "tpubench"):
        assert re.search(rf"^\s+{name}: {ms} ms \({ms}-{ms}\)$", out, re.M), out
    assert "nothing" not in out


def test_rounds_alternate_and_the_empty_step_is_taken_off(monkeypatch):
    args = dropout.parse_args(["--shape=8", "--rounds=3", "--repeats=1"])
    calls = []
    times = iter(range(100))
    monkeypatch.setattr(dropout.time, "perf_counter", lambda: float(next(times)))
    real = dropout.step_fn

    def recording(fn):
        step = real(fn)

        def run(x, seed):
            calls.append(fn)
            return step(x, seed)

        return run

    monkeypatch.setattr(dropout, "step_fn", recording)
    ms = dropout.measure(args)
    timed = calls[15:]  # after 3 x 5 warm-up calls
    names = list(dropout.contenders(0.25))
    fns = list(dict.fromkeys(calls[:15]))
    order = [names[fns.index(f)] for f in timed]
    assert order == [*names, *names[::-1], *names]
    # Each timed call took one clock tick: every contender's time less the empty one is 0.
    assert ms == {"tensorflow": [0.0] * 3, "tpubench": [0.0] * 3}


def test_a_ratio_from_known_times():
    args = dropout.parse_args(["--shape=2,3", "--rounds=2"])
    out = dropout.report(args, {"tensorflow": [2.0, 3.0], "tpubench": [1.0, 1.0]})
    assert "tensorflow/tpubench: 2.50x (2.00-3.00)" in out


def test_no_ratio_when_a_median_is_within_the_empty_steps_noise():
    args = dropout.parse_args(["--shape=2,3", "--rounds=2"])
    out = dropout.report(args, {"tensorflow": [0.05, 0.04], "tpubench": [-0.01, 0.0]})
    assert out.endswith("no ratio: a dropout this small is within the empty step's noise")
    assert "x (" not in out


def test_a_rate_outside_zero_to_one_is_refused(capsys):
    with pytest.raises(SystemExit) as e:
        dropout.parse_args(["--rate=1.5"])
    assert e.value.code == 2
    assert "--rate=1.5: expected a number strictly between 0 and 1" in capsys.readouterr().err
