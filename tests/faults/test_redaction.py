"""Credentials in URLs never reach what tpubench writes (issue 11, item 9).

A user-info part (`gs://user:token@bucket/x`) or a token-like query value
(`?token=...`) given on the command line must not appear in the run record
(argv, flags, config, error), on the console, in metrics.jsonl or in
TensorBoard's event files: every byte under the results directory is searched.
"""

import pathlib

import pytest
from conftest import one_line_error, run_cli

from tpubench.storage import redaction

SECRETS = ("s3cr3t", "abc123", "tok456", "zz9")
LABEL = "https://alice:s3cr3t@example.com/x?token=abc123&step=1"


@pytest.mark.parametrize(
    "given, shown",
    [
        ("gs://user:tok456@bucket/x", "gs://<redacted>@bucket/x"),
        (
            "https://bob@host/p?a=1&token=abc&b=2",
            "https://<redacted>@host/p?a=1&token=<redacted>&b=2",
        ),
        (
            "https://storage.googleapis.com/b/o?X-Goog-Signature=ff00&X-Goog-Date=20250101",
            "https://storage.googleapis.com/b/o?X-Goog-Signature=<redacted>&X-Goog-Date=20250101",
        ),
        (
            "--data_dir=gs://u:p@b/x?sig=1&key=K",
            "--data_dir=gs://<redacted>@b/x?sig=<redacted>&key=<redacted>",
        ),
        ("gs://bucket/x?generation=5", "gs://bucket/x?generation=5"),  # nothing secret: unchanged
        ("user@example.com", "user@example.com"),  # no URL: unchanged
        ("dropout=0.1", "dropout=0.1"),
    ],
)
def test_redact_text(given, shown):
    assert redaction.redact_text(given) == shown


def test_redact_reaches_into_records_and_flag_names():
    record = {"argv": ["--x=gs://a:b@c/d"], "config": {"data": {"data_dir": "gs://a:b@c/d"}}}
    assert redaction.redact(record) == {
        "argv": ["--x=gs://<redacted>@c/d"],
        "config": {"data": {"data_dir": "gs://<redacted>@c/d"}},
    }
    assert record["argv"] == ["--x=gs://a:b@c/d"], "the caller's record is not changed"
    assert redaction.redact_flags({"api_key": "k1", "seed": 3}) == {
        "api_key": "<redacted>",
        "seed": 3,
    }
    assert redaction.redact_argv(["--api_key=k1", "--seed=3"]) == [
        "--api_key=<redacted>",
        "--seed=3",
    ]


def _everything_written(root: pathlib.Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def test_a_finished_run_writes_no_credential_anywhere(tmp_path):
    results = tmp_path / "runs"
    proc, record = run_cli(
        "train",
        "--tiny",
        "--train_steps=4",
        "--use_synthetic_data",
        f"--run_label={LABEL}",
        results_dir=results,
    )
    assert proc.returncode == 0, proc.stderr
    assert record["status"] == "ok"
    assert record["run_label"] == "https://<redacted>@example.com/x?token=<redacted>&step=1"
    assert f"--run_label={record['run_label']}" in record["argv"]
    written = _everything_written(results)
    assert b"metrics.jsonl" in b"".join(p.name.encode() for p in results.rglob("*"))
    assert list(results.rglob("events.out.tfevents*")), "TensorBoard wrote its events"
    for secret in SECRETS:
        assert secret.encode() not in written
        assert secret not in proc.stdout + proc.stderr


def test_a_failed_run_redacts_its_record_and_error_line(tmp_path):
    data_dir = "gs://bob:tok456@bkt/data?token=zz9"
    proc, record = run_cli(
        "train",
        "--tiny",
        "--train_steps=1",
        f"--data_dir={data_dir}",
        f"--run_label={LABEL}",
        results_dir=tmp_path,
    )
    line = one_line_error(proc)
    assert record["status"] == "failed"
    assert record["config"]["data"]["data_dir"] == "gs://<redacted>@bkt/data?token=<redacted>"
    assert record["flags"]["data_dir"] == "gs://<redacted>@bkt/data?token=<redacted>"
    for secret in SECRETS:
        assert secret.encode() not in _everything_written(tmp_path)
        assert secret not in line + proc.stdout
