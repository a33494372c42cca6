"""Verdicts that wait for evidence: smoke, repeats, intervals, named setups, flip lines."""

from __future__ import annotations

import dataclasses
import types

import pytest

from tpubench.core.basis import Basis
from tpubench.study.report import findings, forms
from tpubench.study.run import cells, execute, measured
from tpubench.study.spec import spec

HOST = cells.Host(cores=tuple(range(64)), gpus=8, gpu_name="H100", tpu=False)
BILSTM = "the GPU trains the bidirectional LSTM at most 0.6x as fast as any CPU machine"
CHEAPEST = "the fewest vCPUs tried, 8, train most cheaply: below the GPU and every larger machine"
EQUAL = "64 vCPUs train no faster than 32: about as fast, or slower"


def _m(cell, runs: list[float], usd_hour=0.1, pricing=Basis.SPOT, machine="?", sec_epoch=None):
    """A Measured whose rate and $/epoch come from RUNS (examples/s of each run)."""
    rate = sum(runs) / len(runs)
    sec = sec_epoch or 60000 / rate
    usd = [usd_hour * (60000 / r) / 3600 for r in runs]
    return measured.Measured(
        cell=cell,
        trials=len(runs),
        rate=rate,
        usd_hour=usd_hour,
        usd_epoch=sec * usd_hour / 3600,
        sec_epoch=sec,
        usd_million=None,
        accelerator=cell.device(HOST),
        machine=machine,
        pricing=Basis(pricing),  # typed, as the study reads it
        batch=None,
        paths=(),
        rate_ci=measured.interval(runs),
        usd_epoch_ci=measured.interval(usd),
    )


def _results(name, runs: dict, scale="full", **kw):
    """cpu_vs_gpu-like results: RUNS maps (model, setup label) -> rates of its runs."""
    study = spec.load(name, forms.FORMS, findings.CHECKS)
    all_cells = cells.expand(study, "full")
    got = {}
    for c in all_cells:
        key = (c.model.model, c.setup.label)
        if key in runs:
            machine = c.setup.machine or "?"
            got[c.id] = _m(c, runs[key], pricing=c.setup.pricing or "on_demand", machine=machine)
    repeats = study.runs_per_cell(scale)
    return measured.Results(
        study, scale, HOST, "runs", tuple(all_cells), got, {}, repeats=repeats, **kw
    )


def _verdicts(results) -> dict:
    return {v.finding: v for v in findings.check_all(results)}


EVERY = ["1 GPU", "8 vCPU", "16 vCPU", "32 vCPU", "64 vCPU"]


def test_interval_is_the_t_interval_of_the_mean():
    lo, hi = measured.interval([1.0, 2.0, 3.0])
    assert (round(lo, 3), round(hi, 3)) == (-0.484, 4.484)  # 2 -/+ 4.303 x 1 / sqrt(3)
    assert measured.interval([5.0]) is None


def test_smoke_scale_prints_no_verdict_even_with_every_cell_measured():
    runs = {("imdb_bilstm", label): [100.0 + 10 * i] for i, label in enumerate(EVERY)}
    v = _verdicts(_results("cpu_vs_gpu", runs, scale="smoke"))
    assert v[BILSTM].verdict == "not judged (smoke scale)"
    assert "1 GPU 100.0/s vs the slowest other 110.0/s" in v[BILSTM].measured


def test_a_verdict_needs_the_study_repeats():
    runs = {("imdb_bilstm", label): [100.0 + 50 * i] * 2 for i, label in enumerate(EVERY)}
    v = _verdicts(_results("cpu_vs_gpu", runs))
    assert v[BILSTM].verdict == "not judged (needs 3 runs per cell; has 2)"


def test_within_noise_when_the_interval_spans_the_threshold():
    # 32 vs 64 vCPUs: means 1.0x apart but their runs scatter by 30%.
    runs = {("mnist_mlp", "32 vCPU"): [70.0, 100.0, 130.0], ("mnist_mlp", "64 vCPU"): [100.0] * 3}
    runs[("mnist_mlp", "64 vCPU")] = [99.0, 100.0, 101.0]
    v = _verdicts(_results("cpu_vs_gpu", runs))
    assert v[EQUAL].verdict == "within noise"
    assert "32 vCPU 1.00x [95%: 0.25–1.79] 64 vCPU (mnist_mlp" in v[EQUAL].measured
    # The same means with tight runs hold.
    runs[("mnist_mlp", "32 vCPU")] = [99.0, 100.0, 101.0]
    assert _verdicts(_results("cpu_vs_gpu", runs))[EQUAL].verdict == "holds"


def test_slowest_and_cheapest_judge_only_among_the_named_setups():
    # Every named setup but 64 vCPU measured, and small machines that the
    # finding does not name: no verdict, and it says what is missing.
    runs = {("imdb_bilstm", label): [50.0, 51.0, 52.0] for label in EVERY[:-1]}
    runs[("imdb_bilstm", "1 vCPU")] = [5.0, 5.0, 5.0]
    v = _verdicts(_results("cpu_vs_gpu", runs, where="here"))
    assert v[BILSTM].measured == "not all of 1 GPU, 8 vCPU, 16 vCPU, 32 vCPU, 64 vCPU measured"
    assert v[BILSTM].verdict.startswith("not measured (needs a run of `tpubench study run` here")
    assert v[CHEAPEST].verdict.startswith("not measured")
    # With 64 vCPU too, the 1 vCPU machine (slower, not named) does not decide.
    runs[("imdb_bilstm", "64 vCPU")] = [60.0, 61.0, 62.0]
    runs[("imdb_bilstm", "1 GPU")] = [20.0, 21.0, 22.0]
    v = _verdicts(_results("cpu_vs_gpu", runs))
    assert v[BILSTM].verdict == "holds", v[BILSTM]


def test_a_cost_verdict_prints_what_would_flip_it_from_the_catalog():
    study = spec.load("cpu_vs_gpu", forms.FORMS, findings.CHECKS)
    by = {c.setup.label: c for c in cells.expand(study, "full") if c.model.model == "mnist_mlp"}
    # 16 vCPU (spot $0.12653/h in the catalog) 100 s/epoch; 8 vCPU 250 s/epoch at $0.06327/h.
    w = _m(by["16 vCPU"], [600.0] * 3, 0.12653, "spot", "gcp:n1-highcpu-16", sec_epoch=100)
    r = _m(by["8 vCPU"], [240.0] * 3, 0.06327, "spot", "gcp:n1-highcpu-8", sec_epoch=250)
    from tpubench.study.report import flips

    lines = flips.flip_lines({"16 vCPU": w, "8 vCPU": r})
    # Ties when 100 s x P = 250 s x $0.06327/h: P = $0.158/h; the discount on the
    # $0.56679/h on-demand price that gives P is 1 - 0.158 / 0.56679 = 72%.
    assert lines[0].startswith("16 vCPU stays cheapest unless its machine costs more than $0.158/h")
    assert "(now $0.127/h, spot); 8 vCPU wins below $0.0506/h (now $0.0633/h)" in lines[0]
    assert lines[1] == "16 vCPU stays cheapest unless the spot discount falls below 72% (now 78%)"
    basis = flips.basis_line({"16 vCPU": w, "8 vCPU": r})
    assert (
        basis
        == "cheapest on each cell's own basis: 16 vCPU; all spot: 16 vCPU; all on demand: 16 vCPU"
    )


def test_the_price_basis_that_moves_the_verdict_is_named():
    from tpubench.study.report import flips

    study = spec.load("cpu_vs_gpu", forms.FORMS, findings.CHECKS)
    by = {c.setup.label: c for c in cells.expand(study, "full") if c.model.model == "mnist_mlp"}
    cpu = _m(by["16 vCPU"], [600.0] * 3, 0.12653, "spot", "gcp:n1-highcpu-16", sec_epoch=100)
    # A GPU on demand at $0.50/h, 30 s/epoch: $0.00417 vs the CPU's $0.00351 on spot,
    # but the CPU's on-demand $0.0157 loses.
    gpu = _m(by["1 GPU"], [2000.0] * 3, 0.50, "on_demand", "gcp:t4", sec_epoch=30)
    line = flips.basis_line({"16 vCPU": cpu, "1 GPU": gpu})
    assert "cheapest on each cell's own basis: 16 vCPU" in line
    assert "all on demand: 1 GPU (this basis moves the verdict)" in line


def test_busy_runs_are_left_out_when_enough_quiet_ones_remain():
    run = dataclasses.make_dataclass("Run", ["path"])
    runs = [run(f"r{i}.json") for i in range(4)]
    assert measured.choose(runs, {"r0.json"}, 3) == runs[1:]
    assert measured.choose(runs, {"r0.json", "r1.json"}, 3) == runs  # kept, the cell is marked


@pytest.mark.parametrize(
    "code,signalled,status", [(-2, None, "interrupted"), (1, 2, "interrupted"), (1, None, "failed")]
)
def test_a_cell_stopped_before_its_record_is_interrupted_not_failed(
    tmp_path, code, signalled, status
):
    log = tmp_path / "cell.log"
    log.write_text("Traceback ...\nKeyboardInterrupt\n")
    cell = types.SimpleNamespace(id="c-1")  # no record carries its label
    got, what, path = execute._outcome(str(tmp_path), cell, code, str(log), signalled, set())
    assert (got, path) == (status, None)
    assert what.startswith(f"exit {code}: KeyboardInterrupt")


def test_the_neighbours_share_of_the_host_while_a_cell_ran(monkeypatch):
    """Host CPU seconds less the cell's own, per wall second and core."""
    host = iter([100.0, 103.0])  # /proc/stat: 3 CPU-seconds used by everyone
    clock = iter([10.0, 12.0])  # 2 s of wall time
    monkeypatch.setattr(execute, "_host_cpu_seconds", lambda: next(host))
    monkeypatch.setattr(execute.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(execute.os, "cpu_count", lambda: 2)
    with execute._Neighbours() as load:
        pass  # no child ran: its own share is 0
    assert load.share == pytest.approx(0.75, abs=0.01)  # 3 s / (2 s x 2 cores)
    assert load.share > execute.BUSY_SHARE


def test_a_cheapest_whose_cost_interval_overlaps_the_next_is_said_to_be_noise():
    from tpubench.study.report import flips

    study = spec.load("cpu_vs_gpu", forms.FORMS, findings.CHECKS)
    by = {c.setup.label: c for c in cells.expand(study, "full") if c.model.model == "mnist_mlp"}
    w = _m(by["1 vCPU"], [300.0, 600.0, 900.0], 0.0105, "spot", "gcp:n1-standard-1")
    r = _m(by["2 vCPU"], [800.0, 820.0, 840.0], 0.01582, "spot", "gcp:n1-highcpu-2")
    lines = flips.flip_lines({"1 vCPU": w, "2 vCPU": r})
    assert "1 vCPU and 2 vCPU are within noise of each other: their $/epoch overlap" in lines
