"""bench/one_part.py: both contenders timed in alternating rounds, the empty step taken off."""

from __future__ import annotations

import pathlib
import re
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import one_part  # noqa: E402


def test_it_times_both_and_prints_the_ratio(capsys):
    assert one_part.main(["--shape=4,64", "--rounds=2", "--repeats=3", "--dtype=bfloat16"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("dropout 0.25 on 4x64 bfloat16, forward and backward, 2 rounds:")
    ms = r"-?\d+\.\d{3}"
    for name in ("tensorflow", "tpubench"):
        assert re.search(rf"^\s+{name}: {ms} ms \({ms}-{ms}\)$", out, re.M), out
    assert "nothing" not in out


def test_the_bias_and_relu_part_times_both_kernels(capsys):
    from tpubench.model import cpu_ops

    if not cpu_ops.available()[0]:
        pytest.skip("no C++ compiler here")
    args = ["--part=bias_relu", "--shape=4,3,64", "--rounds=2", "--repeats=3", "--dtype=bfloat16"]
    assert one_part.main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("bias and ReLU on 4x3x64 bfloat16, forward and backward, 2 rounds:")
    for name in ("tensorflow", "tpubench"):
        assert re.search(rf"^\s+{name}: -?\d+\.\d{{3}} ms", out, re.M), out


def test_the_bias_and_relu_part_without_the_kernels_is_one_line(monkeypatch):
    from tpubench.model import cpu_ops

    monkeypatch.setattr(cpu_ops, "available", lambda: (False, "no compiler 'c++'"))
    with pytest.raises(SystemExit) as e:
        one_part.main(["--part=bias_relu", "--shape=2,3"])
    assert str(e.value) == (
        "error: --part=bias_relu needs tpubench's CPU kernels: no compiler 'c++'"
    )


def test_rounds_alternate_and_the_empty_step_is_taken_off(monkeypatch):
    args = one_part.parse_args(["--shape=8", "--rounds=3", "--repeats=1"])
    calls = []
    times = iter(range(100))
    monkeypatch.setattr(one_part.time, "perf_counter", lambda: float(next(times)))
    real = one_part.step_fn

    def recording(fn, weight):
        step = real(fn, weight)

        def run(x, seed, bias):
            calls.append(fn)
            return step(x, seed, bias)

        return run

    monkeypatch.setattr(one_part, "step_fn", recording)
    ms = one_part.measure(args)
    timed = calls[15:]  # after 3 x 5 warm-up calls
    names = list(one_part.contenders("dropout", 0.25))
    fns = list(dict.fromkeys(calls[:15]))
    order = [names[fns.index(f)] for f in timed]
    assert order == [*names, *names[::-1], *names]
    # Each timed call took one clock tick: every contender's time less the empty one is 0.
    assert ms == {"tensorflow": [0.0] * 3, "tpubench": [0.0] * 3}


def test_a_ratio_from_known_times():
    args = one_part.parse_args(["--shape=2,3", "--rounds=2"])
    out = one_part.report(args, {"tensorflow": [2.0, 3.0], "tpubench": [1.0, 1.0]})
    assert "tensorflow/tpubench: 2.50x (2.00-3.00)" in out


def test_no_ratio_when_a_median_is_within_the_empty_steps_noise():
    args = one_part.parse_args(["--shape=2,3", "--rounds=2"])
    out = one_part.report(args, {"tensorflow": [0.05, 0.04], "tpubench": [-0.01, 0.0]})
    assert out.endswith("no ratio: a part this small is within the empty step's noise")
    assert "x (" not in out


def test_a_rate_outside_zero_to_one_is_refused(capsys):
    with pytest.raises(SystemExit) as e:
        one_part.parse_args(["--rate=1.5"])
    assert e.value.code == 2
    assert "--rate=1.5: expected a number strictly between 0 and 1" in capsys.readouterr().err
