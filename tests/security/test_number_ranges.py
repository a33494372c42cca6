"""Class C of issue 34: every number has a range, and nothing unbounded reaches TensorFlow.

A positive but absurd value (a target rate of 1e-6 queries/sec, a batch of
10**10, a 30-day budget) is refused in one line naming the flag and the
range, before TensorFlow starts and before a record is written; a record
holding one is refused by `rerun`; work whose memory is known before it is
allocated is refused with the estimate when the host lacks the memory.
"""

import json

import pytest
from conftest import one_line_error, rerun_cli, run_cli

from tpubench.core import bounds, errors
from tpubench.model import registry


@pytest.mark.parametrize(
    "argv, shown",
    [
        (["train", "--batch_size=10000000000"], "--batch_size=10000000000 is out of range"),
        (["train", "--steps_per_loop=100000000"], "accepted: 1 to 1,000,000 (steps)"),
        (["train", "--price_per_hour=1e300"], "accepted: 0 to 100000 (USD per hour)"),
        (
            ["train", "--shutdown_grace_secs=1e9"],
            "--shutdown_grace_secs=1000000000.0 is out of range",
        ),
        (["infer", "--scenario=server", "--target_qps=0.000001"], "0.1 to 1e+07 (queries per"),
        (["infer", "--batch_size=1,100000000"], "--batch_size=100000000 is out of range"),
        (["infer", "--qsl_samples=1000000000"], "accepted: 1 to 10,000,000 (samples)"),
        (["data", "bench", "--image_size=100000"], "accepted: 8 to 4,096 (pixels a side)"),
    ],
)
def test_an_absurd_number_is_refused_before_anything_starts(tmp_path, argv, shown):
    results = tmp_path if argv[0] != "data" else None
    proc, record = run_cli(*argv, "--tiny", results_dir=results, timeout=60)
    line = one_line_error(proc)
    assert proc.returncode == 2 and shown in line, line
    assert record is None and not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    "argv, shown",
    [
        (["tune", "--model=mnist_mlp", "--budget=30d"], "--budget=2,592,000s is out of range"),
        (["infer", "--tiny", "--scenario=offline", "--min_duration=9d"], "at most 7d"),
    ],
)
def test_a_duration_past_a_week_is_refused(argv, shown, tmp_path):
    proc, _ = run_cli(*argv, results_dir=tmp_path, timeout=60)
    assert proc.returncode == 2 and shown in one_line_error(proc)


def test_a_record_with_an_absurd_number_is_refused_by_rerun(tmp_path):
    path = tmp_path / "old.json"
    flags = {"tiny": True, "batch_size": 2**40}
    path.write_text(
        json.dumps(
            {
                "schema_version": 1,
                "run_id": "20250101-000000-mnist_mlp-abcdef",
                "status": "ok",
                "argv": ["tpubench", "train"],
                "flags": flags,
                "config": {"results_dir": str(tmp_path / "again")},
            }
        )
    )
    proc = rerun_cli(tmp_path, str(path))
    line = one_line_error(proc)
    assert proc.returncode == 2 and "'batch_size'" in line and "at most 1048576" in line


def test_a_hyper_parameter_that_sizes_a_tensor_has_an_upper_bound():
    spec = registry.get("mnist_mlp")
    with pytest.raises(errors.UsageError) as e:
        registry.resolve_params(spec, {"hidden_units": str(10**9)})
    assert "hidden_units=1000000000 is out of range; accepted: an integer from 1 to" in str(e.value)


def test_a_synthetic_batch_larger_than_memory_is_refused_with_the_estimate(monkeypatch):
    import tensorflow as tf

    from tpubench.data import synthetic

    monkeypatch.setattr(bounds, "available_memory", lambda: 2**30)
    spec = (tf.TensorSpec([224, 224, 3], tf.float32), tf.TensorSpec([], tf.int32))
    with pytest.raises(errors.UsageError) as e:
        synthetic.global_batch(spec, {"num_classes": 10}, 4096, 0)
    assert "the synthetic batch (4,096 examples) would take about 9.2 GiB" in str(e.value)
    assert "1.0 GiB available; refused before allocating" in str(e.value)
    features, _ = synthetic.global_batch(spec, {"num_classes": 10}, 2, 0)
    assert features.shape == (2, 224, 224, 3)


def test_a_loadgen_schedule_larger_than_memory_is_refused_with_the_estimate(monkeypatch):
    import types

    from tpubench.run.infer import scenarios, server_search

    monkeypatch.setattr(bounds, "available_memory", lambda: 2**30)
    rules = types.SimpleNamespace(
        effective={"min_query_count": 270_336, "min_duration_seconds": 600.0}
    )
    fast = scenarios.get("server").config(target_qps=1e6)
    with pytest.raises(errors.UsageError) as e:
        server_search.check_schedule(fast, rules)
    assert "LoadGen's query schedule (600,000,000 queries at --target_qps=1e+06)" in str(e.value)
    assert "would take about 357.6 GiB" in str(e.value)  # 640 bytes a query
    server_search.check_schedule(scenarios.get("server").config(target_qps=100.0), rules)


def test_numbers_in_study_and_sweep_files_have_ranges(tmp_path):
    import subprocess
    import sys

    study = tmp_path / "s.yaml"
    study.write_text(
        "title: t\nform: {kind: knee}\nparts:\n  - name: p\n    models: [mnist_mlp]\n"
        "    setups: [{label: one, vcpus: 1, batch_size: 99999999999}]\n"
        "    flags: {train_steps: 10000000000000}\n"
    )
    proc, _ = run_cli("study", "run", study, "--dry-run", timeout=60)
    line = one_line_error(proc)
    assert proc.returncode == 2 and "train_steps: --train_steps=10000000000000 is out of" in line
    sweep = tmp_path / "w.yaml"
    sweep.write_text("runs: [{label: a, threads: 100000, flags: {model: mnist_mlp}}]\n")
    proc = subprocess.run(
        [sys.executable, "-m", "tpubench_launch.main", "sweep", str(sweep), "--dry-run"],
        capture_output=True,
        text=True,
    )
    assert "threads=100000 must be a whole number from 1 to 4,096" in one_line_error(proc)
