"""Bad input: a non-zero exit and one line on stderr naming the bad value.

Flag-level mistakes fail before TensorFlow is imported; mistakes found once
the run has started also leave a run record with status "failed" and the
reason, so a sweep's results directory accounts for every invocation.
(`--strategy=multi_worker` without TF_CONFIG is covered in test_clusters.py.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import one_line_error, run_cli

# Rejected while parsing flags: no TensorFlow import, no record.
FLAG_ERRORS = {
    "accelerator": (["--accelerator=fpga"], ["fpga", "tpu"]),
    "strategy": (["--strategy=bogus"], ["bogus", "mirrored"]),
    "precision": (["--precision=fp8"], ["fp8", "bf16"]),
    "batch_size_zero": (["--batch_size=0"], ["--batch_size", "0"]),
    "batch_size_negative": (["--batch_size=-3"], ["--batch_size", "-3"]),
    "train_steps_zero": (["--train_steps=0"], ["--train_steps", "0"]),
    "params_not_k_v": (["--params=dropout"], ["dropout", "k=v"]),
    "price_per_hour_zero": (["--price_per_hour=0"], ["--price_per_hour", "0"]),
    "profile_steps_reversed": (["--profile_steps=8,5"], ["--profile_steps=8,5", "START,END"]),
    "profile_steps_not_integers": (["--profile_steps=1.5,x"], ["--profile_steps=1.5,x", "whole"]),
    "profile_steps_from_zero": (["--profile_steps=0,3"], ["--profile_steps=0,3", "1 <= START"]),
    "profile_steps_one_value": (["--profile_steps=7"], ["--profile_steps=7", "START,END"]),
}


@pytest.mark.parametrize("case", sorted(FLAG_ERRORS))
def test_bad_flag_is_one_line(case, tmp_path):
    args, needles = FLAG_ERRORS[case]
    proc, record = run_cli("train", *args, results_dir=tmp_path)
    assert proc.returncode == 2
    line = one_line_error(proc)
    for needle in needles:
        assert needle in line
    assert record is None, "a run that never started leaves no record"
    assert proc.stdout == ""


TINY = ["--tiny", "--train_steps=1"]

# Rejected run arguments: (args, exit code, words the line must contain).
RUN_ERRORS = {
    "unknown_model": (["--model=nosuch_net"], 2, ["nosuch_net", "mnist_mlp"]),
    "batch_not_divisible": (
        ["--batch_size=6", "--num_cpu_devices=4", "--use_synthetic_data", *TINY],
        2,
        ["--batch_size=6", "4 replicas"],
    ),
    # n1-standard-7 does not exist; the closest real machine is suggested.
    "unknown_machine": (
        ["--machine=gcp:n1-standard-7", *TINY],
        2,
        ["n1-standard-7", "n1-standard-8"],
    ),
    "missing_data_dir": (["--data_dir={tmp}/no_such_data", *TINY], 2, ["{tmp}/no_such_data"]),
    "tpu_without_tpu": (["--accelerator=tpu", *TINY], 4, ["--accelerator=tpu", "TPU"]),
    # No network here: resolving a Cloud TPU name must fail fast and clearly.
    "unreachable_tpu_name": (["--tpu=nosuch-tpu", *TINY], 4, ["nosuch-tpu", "TPU"]),
    "unknown_params_key": (["--params=dropuot=0.1", *TINY], 2, ["dropuot", "dropout"]),
    "bad_params_value": (["--params=hidden_units=wide", *TINY], 2, ["hidden_units", "wide"]),
    "target_on_synthetic_data": (
        ["--use_synthetic_data", "--target_accuracy=0.9", *TINY],
        2,
        ["--target_accuracy=0.9", "synthetic"],
    ),
    "dataset_the_model_cannot_take": (
        ["--model=cifar10_cnn", "--dataset=digits", *TINY],
        2,
        ["--dataset=digits", "cifar10"],
    ),
    "gpu_flag_on_cpu": (["--num_gpus=2", *TINY], 2, ["--num_gpus=2", "cpu"]),
}


# Refused before TensorFlow loads (pure-Python checks of names, prices and flag
# combinations): one line and no record, since no run started.
BEFORE_TENSORFLOW = {
    "unknown_model",
    "batch_not_divisible",
    "unknown_machine",
    "target_on_synthetic_data",
    "gpu_flag_on_cpu",
    "missing_data_dir",  # a local folder that is not there (issue 61)
    "tpu_without_tpu",  # no TPU device on this host and none named
}


@pytest.mark.parametrize("case", sorted(RUN_ERRORS))
def test_run_error_is_one_line_and_recorded(case, tmp_path):
    args, code, needles = RUN_ERRORS[case]
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    needles = [n.replace("{tmp}", str(tmp_path)) for n in needles]
    results = tmp_path / "runs"
    proc, record = run_cli("train", *args, results_dir=results, timeout=120)
    line = one_line_error(proc)
    assert proc.returncode == code, line
    for needle in needles:
        assert needle in line
    assert proc.stdout == ""
    if case in BEFORE_TENSORFLOW:  # a usage error before TensorFlow loads: no run started
        assert record is None and "run record" not in line
        assert not results.exists() or not list(results.glob("*.json"))
        return
    # The failed invocation is on record, and the error line says where.
    assert record is not None, "a failed run leaves a record"
    assert record["status"] == "failed"
    assert needles[0] in record["error"]
    assert record["argv"][1:] == ["train", *args, f"--results_dir={results}"]
    assert record["finished"] >= record["started"]
    assert str(results / f"{record['run_id']}.json") in line
    assert not [p for p in os.listdir(results) if p.endswith(".tmp")]


@pytest.mark.parametrize("sub", ["train", "infer"])
def test_a_gpu_run_where_no_gpu_can_be_seen_is_refused_before_tensorflow_with_no_record(
    sub, tmp_path
):
    from conftest import NO_TF_CLI

    results = tmp_path / "runs"
    proc = subprocess.run(
        [sys.executable, "-c", NO_TF_CLI, sub, "--accelerator=gpu", f"--results_dir={results}"],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, CUDA_VISIBLE_DEVICES=""),
    )
    line = one_line_error(proc)  # NO_TF_CLI exits 99 had TensorFlow been imported
    assert proc.returncode == 4, line
    assert "--accelerator=gpu but CUDA_VISIBLE_DEVICES='' hides every GPU" in line
    assert "--accelerator=cpu" in line and "run record" not in line
    assert not results.exists()


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--use_synthetic_data", "--target_accuracy=0.9"], "needs real data"),
        (["--num_gpus=2"], "--num_gpus=2 applies to GPUs but the accelerator is cpu"),
        (["--batch_size=6", "--num_cpu_devices=4"], "--batch_size=6 is not divisible by the 4"),
    ],
)
def test_a_flag_combination_is_refused_before_tensorflow_and_leaves_no_record(
    args, needle, tmp_path
):
    from conftest import NO_TF_CLI

    results = tmp_path / "runs"
    proc = subprocess.run(
        [sys.executable, "-c", NO_TF_CLI, "train", *args, f"--results_dir={results}"],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, CUDA_VISIBLE_DEVICES=""),
    )
    line = one_line_error(proc)  # NO_TF_CLI exits 99 had TensorFlow been imported
    assert proc.returncode == 2 and needle in line, line
    assert "run record" not in line and not list(results.glob("*.json"))  # no run started


def test_no_gpu_reason_reads_the_host_without_tensorflow(monkeypatch):
    from tpubench.hardware import placement

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert "hides every GPU" in placement.no_gpu_reason()
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setattr(placement.glob, "glob", lambda pattern: [])
    monkeypatch.setattr(placement.shutil, "which", lambda name: None)
    monkeypatch.setattr(placement.os.path, "exists", lambda path: False)
    assert (
        placement.no_gpu_reason() == "this host has no GPU (no /dev/nvidia* device, no nvidia-smi)"
    )
    monkeypatch.setattr(placement.shutil, "which", lambda name: "/usr/bin/nvidia-smi")
    assert placement.no_gpu_reason() is None  # TensorFlow decides
    placement.check_gpu("cpu")  # only --accelerator=gpu is checked


def test_malformed_price_catalog(tmp_path):
    catalog = tmp_path / "prices.csv"
    catalog.write_text("key,provider\ngcp:n1-standard-8,gcp\n")
    proc, record = run_cli(
        "train", f"--price_catalog={catalog}", *TINY, results_dir=tmp_path / "runs", timeout=120
    )
    line = one_line_error(proc)
    assert proc.returncode == 2
    assert str(catalog) in line
    assert "on_demand" in line, "the message says which column is missing"
    assert record is None  # refused before TensorFlow loaded: no run started, no record


def test_unknown_subcommand():
    proc, _ = run_cli("frobnicate")
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "frobnicate" in line and "train" in line


def test_no_subcommand_prints_usage():
    proc, _ = run_cli()
    assert proc.returncode == 2
    for sub in ("train", "models", "prices", "rerun"):
        assert sub in proc.stdout


def test_rerun_of_a_missing_or_foreign_file(tmp_path):
    proc, _ = run_cli("rerun", tmp_path / "nope.json")
    assert proc.returncode == 2
    assert "nope.json" in one_line_error(proc)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": 1}))
    proc, _ = run_cli("rerun", other)
    assert proc.returncode == 2
    assert "other.json" in one_line_error(proc)


def test_verbose_shows_the_traceback(tmp_path):
    proc, record = run_cli(
        "train", "--model=nosuch_net", "--verbose", results_dir=tmp_path, timeout=120
    )
    assert proc.returncode == 2
    assert "Traceback" in proc.stderr
    assert "nosuch_net" in proc.stderr.strip().splitlines()[-1]
    assert record is None  # refused before TensorFlow loaded


def test_module_entry_point_and_console_script_agree():
    """`tpubench` (the installed script) and `python -m tpubench` are the same program."""
    script = os.path.join(os.path.dirname(sys.executable), "tpubench")
    a = subprocess.run([script, "frobnicate"], capture_output=True, text=True, timeout=60)
    b, _ = run_cli("frobnicate")
    assert (a.returncode, a.stderr) == (b.returncode, b.stderr)


def test_helpshort_lists_the_subcommands_flags():
    proc, _ = run_cli("prices", "--helpshort")
    assert proc.returncode == 0, proc.stderr
    assert "--machine" in proc.stdout and "--pricing" in proc.stdout


@pytest.mark.parametrize(
    "argv, shown, fixed",
    [
        (["train", "--data_dir=gs:/bucket/x"], "--data_dir=gs:/bucket/x", "gs://bucket/x"),
        (["runs", "gs:/bucket/runs"], "gs:/bucket/runs", "gs://bucket/runs"),
        (["report", "gs:bucket/r"], "gs:bucket/r", "gs://bucket/r"),
        (
            ["data", "prepare", "--dataset=digits", "--output=gs:///b/d"],
            "--output=gs:///b/d",
            "gs://b/d",
        ),
    ],
)
def test_one_slash_gs_url_gets_a_hint(argv, shown, fixed):
    out = subprocess.run(
        [sys.executable, "-m", "tpubench", *argv], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 2
    assert out.stderr.strip() == (
        f"tpubench {argv[0]}: error: {shown} is not a gs:// URL (two slashes after gs:); "
        f"did you mean {fixed}?"
    )
