"""Smoke layer (tests/smoke.py): train, infer, rerun, runs, report, advise, models, prices, peak.

One tiny training run is shared: infer reads its checkpoint, rerun repeats
it, and runs/report/advise read the records they wrote.
"""

from __future__ import annotations

import csv
import importlib
import json
import pathlib

import pytest
from smoke import covers, ok, record_line, records, run

TRAIN = ["--model=mnist_mlp", "--train_steps=20", "--batch_size=32"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    work = tmp_path_factory.mktemp("smoke_runs")
    proc = run("tpubench", "train", *TRAIN, "--model_dir=model", "--results_dir=runs", cwd=work)
    return work, proc


def _vm_prefix(cpu: dict) -> str:
    """The VM family a CPU run on a host with CPU is priced as first, with no --machine."""
    if cpu["amx"] != "absent":
        return "gcp:n4-"
    if "AMD" in cpu["model"].upper().split():
        return "gcp:c4d-" if "avx512_bf16" in cpu["isa"] else "gcp:n2d-"
    return "gcp:n1-"


@covers("tpubench train")
def test_train(trained):
    work, proc = trained
    out = ok(proc)
    assert "mnist_mlp on digits — cpu / one_device, 1 replica(s), fp32, global batch 32" in out
    assert "examples/sec" in out and "eval accuracy" in out and "$/epoch" in out
    (rec,) = records(work / "runs")
    assert rec["status"] == "ok" and rec["kind"] == "train"
    assert rec["results"]["final_step"] == 20 and rec["results"]["examples_per_sec"] > 0
    assert 0.1 < rec["results"]["eval"]["accuracy"] <= 1.0  # 20 steps on real digits
    assert (work / record_line(out)).resolve() == pathlib.Path(rec["_path"]).resolve()
    assert list((work / "model" / "checkpoints").glob("ckpt-20.index"))
    # No --machine: priced as VMs whose CPUs are of this host's kind (AMX, AMD EPYC
    # with or without AVX-512 BF16, or other x86).
    from tpubench.cost import run as cost_run

    cpu = rec["hardware"]["cpu"]
    first = rec["cost"]["machines"][0]["machine"]
    assert first.startswith(_vm_prefix(cpu)), (first, cpu)
    kind = cost_run.FAMILIES[cost_run.cpu_family(cpu)][0]
    assert (f"like this host's, {kind}" in rec["cost"]["note"]) == (_vm_prefix(cpu) != "gcp:n1-"), (
        rec["cost"]
    )


@covers("tpubench infer", "tpubench infer --scenario=closed_loop")
def test_infer_closed_loop_from_the_trained_weights(trained):
    work, _ = trained
    proc = run(
        "tpubench",
        "infer",
        "--model=mnist_mlp",
        "--model_dir=model",
        "--batch_size=1,16",
        "--num_batches=10",
        "--num_warmup_batches=2",
        "--results_dir=infer",
        cwd=work,
    )
    out = ok(proc)
    assert out.count("record: ") == 2
    b1, b16 = records(work / "infer")
    assert (b1["global_batch_size"], b16["global_batch_size"]) == (1, 16)
    for rec in (b1, b16):
        assert rec["kind"] == "infer" and rec["status"] == "ok"
        assert rec["results"]["examples_per_sec"] > 0
        assert rec["weights"]["source"] == "checkpoint" and rec["weights"]["step"] == 20
        assert rec["cost"]["machines"][0]["usd_per_million_predictions"] > 0
        cpu = rec["hardware"]["cpu"]
        assert rec["cost"]["machines"][0]["machine"].startswith(_vm_prefix(cpu)), cpu
    assert "batch 16" in out and "$/hour" in out


@covers("tpubench rerun")
def test_rerun_repeats_the_recorded_run(trained):
    work, _ = trained
    (first,) = [r for r in records(work / "runs") if r["status"] == "ok"][:1]
    proc = run("tpubench", "rerun", first["_path"], "--results_dir=rerun", cwd=work)
    out = ok(proc)
    (again,) = records(work / "rerun")
    assert again["status"] == "ok" and again["run_id"] != first["run_id"]
    same = ("model", "train_steps", "seed", "precision", "data")
    assert {k: again["config"][k] for k in same} == {k: first["config"][k] for k in same}
    for k in ("global_batch_size", "per_replica_batch_size"):  # schema 2: the batch, once
        assert again[k] == first[k]
    assert again["results"]["final_step"] == 20
    assert "record: " in out


@covers("tpubench runs")
def test_runs_lists_the_records(trained):
    work, _ = trained
    out = ok(run("tpubench", "runs", "runs", cwd=work))
    assert out.splitlines()[0].split()[:3] == ["started", "status", "kind"]
    row = next(x for x in out.splitlines() if "train" in x)
    assert " ok " in row and "mnist_mlp" in row


@covers("tpubench report")
def test_report_writes_tables_and_charts(trained):
    work, _ = trained
    out = ok(run("tpubench", "report", "runs", "--output=rep", cwd=work))
    assert "wrote rep/report.html" in out
    for name in ("summary.csv", "report.md", "report.html", "throughput.png"):
        assert (work / "rep" / name).stat().st_size > 0, name
    rows = list(csv.DictReader((work / "rep" / "summary.csv").open()))
    assert any(r.get("model") == "mnist_mlp" for r in rows), rows
    assert (work / "rep" / "throughput.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@covers("tpubench advise")
def test_advise_picks_a_configuration(trained):
    work, _ = trained
    out = ok(run("tpubench", "advise", "runs", "--model=mnist_mlp", "--deadline=1h", cwd=work))
    assert "Advice, on on-demand prices (--pricing=on_demand):" in out
    assert "on-demand: mnist_mlp" in out and "cheapest of" in out


@covers("tpubench models")
def test_models_lists_the_built_in_models(tmp_path):
    out = ok(run("tpubench", "models", "--format=json", cwd=tmp_path))
    rows = {r["name"]: r for r in json.loads(out)}
    assert {"mnist_mlp", "resnet50", "bert_base"} <= set(rows)
    assert rows["resnet50"]["parameters"] > 20_000_000


@covers("tpubench prices")
def test_prices_prices_a_machine(tmp_path):
    out = ok(run("tpubench", "prices", "--machine=gcp:n1-standard-8", cwd=tmp_path))
    assert "gcp:n1-standard-8" in out
    total = next(x for x in out.splitlines() if x.startswith("total "))
    assert float(total.split()[1]) > 0 and "USD/hour" in total


@covers("tpubench peak")
def test_peak_shows_the_cpu_peak(tmp_path):
    out = ok(run("tpubench", "peak", "--format=json", cwd=tmp_path))
    data = json.loads(out)
    fp32 = [p for p in data["cpu"]["peaks"] if p["precision"] == "fp32"]
    assert fp32 and fp32[0]["flops"] > 1e9


def test_every_command_has_a_smoke_test():
    """The rule of tests/smoke.py: a command with no smoke test here fails the suite."""
    import smoke

    for name in ("test_smoke_runs", "test_smoke_serving", "test_smoke_launch"):
        importlib.import_module(name)
    missing = sorted(smoke.expected() - smoke.COVERED)
    assert not missing, f"commands with no smoke test in tests/test_smoke*.py: {missing}"
