"""`tpubench data bench --results_dir`: a run record like train's and infer's, when asked."""

from __future__ import annotations

import json

import pytest
from conftest import one_line_error, run_cli

from tpubench.report import load


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "dg"
    proc, _ = run_cli("data", "prepare", "--dataset=digits", f"--output={out}", "--num_shards=2")
    assert proc.returncode == 0, proc.stderr
    return out


def test_bench_writes_a_data_bench_record_when_asked(digits, tmp_path):
    results = tmp_path / "runs"
    proc, record = run_cli(
        "data", "bench", f"--data_dir={digits}", "--model=mnist_mlp", "--batches=5",
        "--warmup_batches=1", "--read_mb_per_s=50", "--run_label=cell-7", results_dir=results,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("input pipeline of 'mnist_mlp' over ")  # the console as before
    assert "examples/s" in lines[1] and "MB/s of records" in lines[1]
    assert lines[-1] == f"run record: {results}/{record['run_id']}.json"
    assert record["kind"] == "data_bench" and record["status"] == "ok"
    assert record["run_label"] == "cell-7" and record["started"] <= record["finished"]
    assert record["argv"][1:3] == ["data", "bench"]
    assert record["config"]["read_mb_per_s"] == 50 and record["config"]["batches"] == 5
    assert record["data"]["name"] == "digits" and record["data"]["read_mb_per_s"] == 50
    assert record["model"]["name"] == "mnist_mlp" and record["global_batch_size"] > 0
    res = record["results"]
    assert res["examples_per_sec"] > 0 and res["mb_per_sec"] > 0 and res["batches"] == 5
    assert res["examples"] == 5 * record["global_batch_size"]
    cpu = record["hardware"]["cpu"]
    assert cpu["affinity_cores"] == len(cpu["pinned_cores"]) >= 1
    # Atomic: the record alone, no temporary file beside it.
    assert [p.name for p in results.iterdir()] == [f"{record['run_id']}.json"]
    # report reads it as its own kind of rate, never mixed with a model's.
    loaded = load.load([str(results)])
    assert [r.dims["model"] for r in loaded.runs] == ["mnist_mlp [data_bench]"]
    advise = run_cli("advise", str(results), "--model=mnist_mlp [data_bench]", "--deadline=1h")[0]
    assert "times the input pipeline alone" in one_line_error(advise)
    rerun = run_cli("rerun", f"{results}/{record['run_id']}.json")[0]
    assert "records no `tpubench train` or `tpubench infer` run" in one_line_error(rerun)


def test_bench_without_results_dir_writes_no_record(digits, tmp_path):
    proc, _ = run_cli(
        "data", "bench", f"--data_dir={digits}", "--model=mnist_mlp", "--batches=3",
        "--format=json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "record_path" not in json.loads(proc.stdout)
    proc, _ = run_cli("data", "bench", f"--data_dir={digits}", "--run_label=x")
    line = one_line_error(proc)
    assert proc.returncode == 2 and "--run_label labels the run record" in line


def test_a_failed_bench_leaves_a_failed_record_and_one_line(digits, tmp_path):
    """A bench that fails once it reads (a damaged shard) keeps a failed record naming the file;
    a usage error (an unknown model) is refused before anything is written."""
    import shutil

    damaged = tmp_path / "dg"
    shutil.copytree(digits, damaged)
    shard = sorted(damaged.glob("train-*.tfrecord"))[0]
    data = bytearray(shard.read_bytes())
    for i in range(100, len(data), 97):
        data[i] ^= 0xFF
    shard.write_bytes(bytes(data))
    results = tmp_path / "runs"
    proc, record = run_cli(
        "data", "bench", f"--data_dir={damaged}", "--model=mnist_mlp", results_dir=results
    )
    line = one_line_error(proc)
    assert proc.returncode != 0 and f"corrupted TFRecord shard {shard}" in line, line
    assert "internal error" not in line
    assert record["status"] == "failed" and str(shard) in record["error"]
    assert f"[run record: {results}/{record['run_id']}.json]" in line
    assert str(shard) in load.load([str(results)]).excluded[0].reason
    proc, record = run_cli(
        "data", "bench", f"--data_dir={digits}", "--model=nosuch", results_dir=tmp_path / "r2"
    )
    assert proc.returncode == 2 and "unknown model 'nosuch'" in one_line_error(proc)
    assert record is None and not (tmp_path / "r2").exists()


def test_an_interrupted_bench_leaves_an_interrupted_record(digits, tmp_path):
    import subprocess
    import sys
    import time

    from conftest import sigint_when

    results = tmp_path / "runs"
    argv = [sys.executable, "-m", "tpubench", "data", "bench", f"--data_dir={digits}"]
    argv += ["--model=mnist_mlp", "--batches=10000000"]
    proc = subprocess.Popen([*argv, f"--results_dir={results}"], stderr=subprocess.PIPE, text=True)
    start = time.monotonic()
    stderr = sigint_when(proc, lambda: time.monotonic() - start > 15, timeout=120)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted (SIGINT)" in stderr
    (path,) = results.glob("*.json")
    record = json.loads(path.read_text())
    assert record["status"] == "interrupted" and record["finished"]
    assert f"[run record: {path}]" in stderr
