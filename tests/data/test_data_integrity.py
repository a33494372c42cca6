"""Damaged shards and the input-bound diagnosis, through the real CLI."""

from __future__ import annotations

import json
import pathlib

import pytest
from conftest import one_line_error, run_cli


def _readable(path: pathlib.Path) -> int:
    import tensorflow as tf

    n = 0
    try:
        for _ in tf.data.TFRecordDataset(str(path)):
            n += 1
    except tf.errors.DataLossError:
        pass
    return n


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    """digits prepared afresh, with one train shard corrupted and one truncated."""
    out = tmp_path_factory.mktemp("damaged") / "digits"
    proc, _ = run_cli("data", "prepare", "--dataset=digits", f"--output={out}")
    assert proc.returncode == 0, proc.stderr
    m = json.loads((out / "manifest.json").read_text())
    files = m["splits"]["train"]["files"]
    corrupt, truncate = out / files[1], out / files[2]
    data = bytearray(corrupt.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 16] = bytes(16)  # zeros in a record's payload: its CRC fails
    corrupt.write_bytes(bytes(data))
    truncate.write_bytes(truncate.read_bytes()[:-300])
    counts = dict(zip(files, m["splits"]["train"]["file_examples"], strict=True))
    skipped = {f: counts[f] - _readable(out / f) for f in (files[1], files[2])}
    return out, files[1], files[2], skipped


def test_damaged_shard_fails_naming_the_file(damaged, tmp_path):
    data_dir, corrupt, truncated, _ = damaged
    proc, record = run_cli(
        "train", f"--data_dir={data_dir}", "--train_steps=40", "--steps_per_loop=10",
        results_dir=tmp_path,
    )  # fmt: skip
    line = one_line_error(proc)
    assert proc.returncode == 3
    assert corrupt in line or truncated in line
    assert "offset" in line and "--skip_corrupt" in line
    assert record["status"] == "failed" and (
        corrupt in record["error"] or truncated in record["error"]
    )


def test_skip_corrupt_trains_and_counts_what_was_skipped(damaged, tmp_path):
    data_dir, corrupt, truncated, skipped = damaged
    proc, record = run_cli(
        "train", f"--data_dir={data_dir}", "--train_steps=30", "--steps_per_loop=10",
        "--skip_corrupt", results_dir=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    s = record["data"]["skipped"]
    by_file = {pathlib.Path(d["file"]).name: d for d in s["damaged_files"]}
    assert set(by_file) == {corrupt, truncated}
    assert by_file[corrupt]["kind"] == "corrupted" and by_file[corrupt]["offset"] > 0
    assert {f: d["skipped"] for f, d in by_file.items()} == skipped
    assert s["examples_skipped"] == sum(skipped.values()) > 0
    assert "skipped (--skip_corrupt)" in proc.stdout


def test_skip_corrupt_epoch_counts_only_the_readable_records(damaged, tmp_path):
    data_dir, corrupt, truncated, skipped = damaged
    m = json.loads((data_dir / "manifest.json").read_text())["splits"]["train"]
    readable = sum(_readable(data_dir / f) for f in m["files"])  # read here, record by record
    assert readable == m["examples"] - sum(skipped.values()) < m["examples"]
    proc, record = run_cli(
        "train", f"--data_dir={data_dir}", "--train_epochs=1", "--batch_size=64",
        "--steps_per_loop=5", "--skip_corrupt", results_dir=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert record["examples_per_epoch"] == readable
    assert record["train_steps"] == -(-readable // 64)  # one epoch of the readable records
    assert f"1 epoch = {readable:,} examples" in " ".join(proc.stdout.split())


def test_data_check_lists_damaged_shards(damaged):
    data_dir, corrupt, truncated, skipped = damaged
    proc, _ = run_cli("data", "check", f"--data_dir={data_dir}", "--format=json")
    assert proc.returncode == 3
    found = {pathlib.Path(d["file"]).name: d for d in json.loads(proc.stdout)["damaged"]}
    assert set(found) == {corrupt, truncated}
    assert {f: d["skipped"] for f, d in found.items()} == skipped


def test_compare_synthetic_records_ratio_cpu_and_verdict(tmp_path):
    proc, record = run_cli(
        "train", "--compare_synthetic", "--train_steps=60", "--steps_per_loop=10",
        results_dir=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    r = record["results"]
    d = r["input_diagnosis"]
    assert d["real_examples_per_sec"] == r["examples_per_sec"]
    assert d["ratio"] == pytest.approx(
        d["real_examples_per_sec"] / d["synthetic_examples_per_sec"], abs=1e-4
    )
    trusted = "input-bound" if d["ratio"] < 0.95 else "not input-bound"
    if d["verdict"] == "unreliable":  # a noisy pair (a busy host): says why, not a verdict
        assert d["verdict_if_trusted"] == trusted and d["unreliable_because"]
    else:
        assert d["verdict"] == trusted
    for cpu in (d["host_cpu_real"], d["host_cpu_synthetic"]):
        assert 0.0 <= cpu["system_percent_mean"] <= 100.0 and cpu["cores"] >= 1
    assert record["data"]["name"] == "digits"  # the record describes the real-data run
    assert "input verdict" in proc.stdout and d["verdict"] in proc.stdout

    bad, _ = run_cli("train", "--compare_synthetic", "--use_synthetic_data")
    assert "--compare_synthetic" in one_line_error(bad)
