"""`tpubench train --optimizer --per_replica_batch_size`: what the record and summary say."""

from __future__ import annotations

import json
import subprocess
import sys


def _train(tmp_path, *flags):
    return subprocess.run(
        [sys.executable, "-m", "tpubench", "train", f"--results_dir={tmp_path}", *flags],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_per_replica_batch_and_sgd_on_two_replicas_in_fp16(tmp_path):
    proc = _train(
        tmp_path,
        "--model=mnist_mlp",
        "--tiny",
        "--use_synthetic_data",
        "--num_cpu_devices=2",
        "--per_replica_batch_size=16",
        "--optimizer=sgd",
        "--precision=fp16",
        "--train_steps=3",
    )
    assert proc.returncode == 0, proc.stderr
    (path,) = tmp_path.glob("*.json")
    rec = json.loads(path.read_text())
    assert (rec["global_batch_size"], rec["per_replica_batch_size"]) == (32, 16)
    assert rec["flags"]["per_replica_batch_size"] == 16 and rec["flags"]["batch_size"] is None
    assert not {"batch_size", "per_replica_batch_size"} & set(rec["config"])  # said once
    assert rec["config"]["optimizer"] == "sgd" and rec["model"]["optimizer"] == "sgd"
    title = " ".join(proc.stdout.split())
    assert "global batch 32 (16 per replica), optimizer sgd" in title


def test_both_batch_flags_are_refused_in_one_line(tmp_path):
    proc = _train(tmp_path, "--model=mnist_mlp", "--batch_size=64", "--per_replica_batch_size=8")
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--batch_size=64" in lines[0]
    assert "--per_replica_batch_size=8" in lines[0]
    assert not list(tmp_path.glob("*.json"))  # refused before anything ran


def test_unknown_optimizer_is_refused_naming_the_choices(tmp_path):
    proc = _train(tmp_path, "--model=mnist_mlp", "--optimizer=lamb")
    assert proc.returncode != 0
    assert "lamb" in proc.stderr and "sgd" in proc.stderr and "momentum" in proc.stderr
