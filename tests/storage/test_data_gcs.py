"""The real gs:// path: TensorFlow's GCS file system and google-cloud-storage against
a local GCS server (tpubench.testing.local_gcs), including faults."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from conftest import one_line_error, run_cli

from tpubench.storage import gcs

BUCKET = "gs://tpubench-test"


def _record_path(stdout: str) -> str:
    m = re.search(r"record: (gs://\S+\.json)", stdout)
    assert m, stdout
    return m.group(1)


def test_prepare_train_and_read_back_on_gcs(gcs_env):
    data = f"{BUCKET}/data/digits"
    proc, _ = run_cli("data", "prepare", "--dataset=digits", f"--output={data}")
    assert proc.returncode == 0, proc.stderr
    assert "upload" in proc.stdout
    objects = gcs.list_objects(data)
    manifest = json.loads(gcs.read_bytes(f"{data}/manifest.json"))
    shards = [f for s in manifest["splits"].values() for f in s["files"]]
    assert sorted(objects) == sorted([f"{data}/manifest.json"] + [f"{data}/{f}" for f in shards])
    meta = gcs.metadata(f"{data}/{manifest['splits']['train']['files'][0]}")
    assert meta["tpubench-dataset"] == "digits" and meta["tpubench-split"] == "train"
    assert int(meta["tpubench-examples"]) == manifest["splits"]["train"]["file_examples"][0]
    assert meta["tpubench-fingerprint"] == manifest["fingerprint"]

    proc, _ = run_cli(
        "train", f"--data_dir={data}", f"--model_dir={BUCKET}/models/m1",
        f"--results_dir={BUCKET}/runs", "--train_steps=20", "--steps_per_loop=10",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    path = _record_path(proc.stdout)
    record = json.loads(gcs.read_bytes(path))  # google-cloud-storage, no TensorFlow
    assert record["status"] == "ok" and record["results"]["final_step"] == 20
    assert record["data"]["fingerprint"] == manifest["fingerprint"]
    assert record["data"]["data_dir"] == data
    assert gcs.metadata(path) == {"status": "ok", "model": record["model"]["name"], "kind": "train"}
    written = gcs.list_objects(f"{BUCKET}/models/m1")
    assert f"{BUCKET}/models/m1/metrics.jsonl" in written
    assert any("/checkpoints/ckpt-20" in x for x in written)
    assert any("/tensorboard/" in x for x in written)

    listing, _ = run_cli("runs", f"{BUCKET}/runs", "--format=json")
    assert listing.returncode == 0, listing.stderr
    rows = json.loads(listing.stdout)
    assert [(r["path"], r["status"]) for r in rows] == [(path, "ok")]

    report, _ = run_cli("report", f"{BUCKET}/runs", "--format=csv")  # reads gs:// without TF
    assert report.returncode == 0, report.stderr
    (values,) = list(csv.DictReader(io.StringIO(report.stdout)))
    assert values["kind"] == "measured" and values["model"] == "mnist_mlp"
    assert values["trials"] == "1" and values["run_ids"] == record["run_id"]
    assert float(values["examples_per_sec_median"]) == pytest.approx(
        record["results"]["examples_per_sec"], rel=1e-3
    )


def test_transient_503s_are_retried_and_the_run_completes(gcs_env, local_gcs, tmp_path):
    data = f"{BUCKET}/data/digits-503"
    proc, _ = run_cli("data", "prepare", "--dataset=digits", f"--output={data}")
    assert proc.returncode == 0, proc.stderr
    local_gcs.fail(r"digits-503", 503, times=3)
    proc, record = run_cli(
        "train", f"--data_dir={data}", "--train_steps=10", "--steps_per_loop=10",
        results_dir=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert record["status"] == "ok"
    assert [h[2] for h in local_gcs.faults.hits] == [503, 503, 503]


def test_wrong_bucket_fails_before_training(gcs_env, tmp_path):
    proc, record = run_cli(
        "train", "--results_dir=gs://no-such-bucket/runs", f"--model_dir={tmp_path / 'm'}"
    )
    line = one_line_error(proc)
    assert proc.returncode == 3 and "gs://no-such-bucket does not exist" in line
    assert not (tmp_path / "m").exists()  # nothing trained


def test_missing_data_and_missing_record(gcs_env, tmp_path):
    proc, record = run_cli("train", f"--data_dir={BUCKET}/nothing/here", results_dir=tmp_path)
    line = one_line_error(proc)
    assert proc.returncode == 3 and f"{BUCKET}/nothing/here does not exist" in line
    assert record["status"] == "failed" and "does not exist" in record["error"]
    proc, _ = run_cli("rerun", f"{BUCKET}/runs/no-such-run.json")
    assert "no such object" in one_line_error(proc)


def test_denied_access_is_one_clear_line_and_a_record(gcs_env, local_gcs, tmp_path):
    local_gcs.fail(r"/b/tpubench-test/o", 403)
    proc, record = run_cli("train", f"--data_dir={BUCKET}/data/digits", results_dir=tmp_path)
    line = one_line_error(proc)
    assert proc.returncode == 3 and "access denied (HTTP 403)" in line
    assert "gs://tpubench-test" in line
    assert record["status"] == "failed" and "access denied" in record["error"]


def _no_credentials(tmp_path, monkeypatch):
    monkeypatch.delenv("GOOGLE_AUTH_TOKEN_FOR_TESTING", raising=False)
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no gcloud application-default file
    monkeypatch.setenv("NO_GCE_CHECK", "true")
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")  # no metadata server either


def test_missing_credentials_are_named(tmp_path, monkeypatch):
    _no_credentials(tmp_path, monkeypatch)
    proc, _ = run_cli("runs", f"{BUCKET}/runs")
    line = one_line_error(proc)
    assert "no Google Cloud credentials" in line and "application-default login" in line


@pytest.mark.parametrize(
    "args",
    [
        ("data", "bench", "--model=mnist_mlp", f"--data_dir={BUCKET}/imagenet"),
        ("data", "check", f"--data_dir={BUCKET}/imagenet"),
        ("data", "bench", "--model=mnist_mlp", "--data_dir=DATA", f"--results_dir={BUCKET}/runs"),
    ],
    ids=["bench", "check", "bench-records"],
)
def test_data_commands_name_missing_credentials_in_the_same_line(tmp_path, monkeypatch, args):
    """README's `tpubench data bench --data_dir=gs://...`: the credentials line every other
    command prints (was TensorFlow's raw libcurl error), before TensorFlow starts."""
    _no_credentials(tmp_path, monkeypatch)
    data = tmp_path / "data"
    data.mkdir()
    (data / "manifest.json").write_text("{}")
    args = [a.replace("=DATA", f"={data}") for a in args]
    proc, _ = run_cli(*args, env={"TF_CPP_MIN_LOG_LEVEL": "0"}, timeout=120)
    line = one_line_error(proc)
    assert line.startswith("tpubench data: error: no Google Cloud credentials for gs://"), line
    assert "application-default login" in line
    assert "tensorflow" not in proc.stderr.lower()


def test_data_check_and_bench_read_a_bucket_they_may_read(gcs_env, tmp_path):
    """With credentials, the check before TensorFlow passes and both read gs:// as before."""
    data = f"{BUCKET}/data/bench-digits"
    proc, _ = run_cli("data", "prepare", "--dataset=digits", f"--output={data}")
    assert proc.returncode == 0, proc.stderr
    proc, _ = run_cli("data", "check", f"--data_dir={data}")
    assert proc.returncode == 0 and "all shards read cleanly" in proc.stdout, proc.stderr
    proc, record = run_cli(
        "data", "bench", "--model=mnist_mlp", f"--data_dir={data}", "--batches=5",
        results_dir=f"{BUCKET}/bench-runs",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"input pipeline of 'mnist_mlp' over {data}" in proc.stdout
    assert any(p.endswith(".json") for p in gcs.list_objects(f"{BUCKET}/bench-runs"))
