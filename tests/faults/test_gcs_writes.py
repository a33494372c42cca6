"""gs:// metric and checkpoint writes off the training path (issue 11, Also).

The local GCS server adds latency to the metrics and TensorBoard objects'
requests, or refuses them: a run with its --model_dir on gs:// must not
spend its training time waiting for uploads, every metric line must still
land, checkpoints must restore, and a failing upload must give a warning
and a truthful record rather than a hang.
"""

from __future__ import annotations

import json
import re
import uuid

import pytest
from conftest import run_cli

from tpubench.storage import gcs

BUCKET = "gs://tpubench-test"
LATENCY = 0.1  # seconds added to each metrics.jsonl / events request (a flush: ~8)
METRIC_OBJECTS = r"metrics\.jsonl|tfevents"


def _train(model_dir, results_dir, *extra, steps=2000, env=None):
    return run_cli(
        "train", "--tiny", "--use_synthetic_data", f"--train_steps={steps}",
        "--steps_per_loop=10", "--log_every_secs=1", f"--model_dir={model_dir}", *extra,
        results_dir=results_dir, env=env,
    )  # fmt: skip


def _blocked_while_training(record) -> float:
    r = record["results"]
    return r["io_blocked_seconds"] - r["io_blocked_final_seconds"]


def _metric_steps(model_dir) -> list[int]:
    text = gcs.read_bytes(f"{model_dir}/metrics.jsonl").decode()
    return [json.loads(x)["step"] for x in text.splitlines() if x.strip()]


def _tensorboard_steps(model_dir) -> list[int]:
    import tensorflow as tf

    steps = []
    for path in tf.io.gfile.glob(f"{model_dir}/tensorboard/events.out.tfevents.*"):
        for raw in tf.data.TFRecordDataset(path):
            event = tf.compat.v1.Event.FromString(raw.numpy())
            steps += [event.step for v in event.summary.value if v.tag == "train/loss"]
    return sorted(steps)


@pytest.mark.slow  # three gs:// runs, about 50 s here
def test_slow_metric_uploads_stay_off_the_training_path_and_every_line_lands(
    gcs_env, local_gcs, tmp_path
):
    local_gcs.delay(METRIC_OBJECTS, LATENCY)
    tag = uuid.uuid4().hex[:8]
    runs = {}
    for mode in ("sync", "async"):
        model_dir = f"{BUCKET}/writes-{tag}/{mode}"
        flag = "--noasync_remote_writes" if mode == "sync" else "--async_remote_writes"
        proc, record = _train(model_dir, tmp_path / mode, flag)
        assert proc.returncode == 0, proc.stderr
        assert record["status"] == "ok" and not record.get("warnings"), record.get("warnings")
        runs[mode] = (model_dir, record)
    sync, fast = runs["sync"][1], runs["async"][1]
    assert sync["results"]["io_async"] is False and fast["results"]["io_async"] is True
    # The sync run waited for its flushes between loops: at least one upload (two requests).
    assert _blocked_while_training(sync) >= 2 * LATENCY, sync["results"]
    assert _blocked_while_training(fast) < 0.2 * _blocked_while_training(sync), (
        fast["results"],
        sync["results"],
    )
    assert fast["results"]["pause_seconds"] < 0.2 * sync["results"]["pause_seconds"]

    for model_dir, record in runs.values():
        loops = record["results"]["loops"]
        ends = [sum(n for n, _ in loops[: i + 1]) for i in range(len(loops))]
        assert _metric_steps(model_dir) == ends  # every loop's line, once, in order
        assert _tensorboard_steps(model_dir) == ends
    local_gcs.faults.clear()

    # The async run's final checkpoint is complete: the next run resumes from it, and
    # saves in the background every loop (TensorFlow's async helper alone failed every
    # save of Keras variables after the first).
    model_dir, record = runs["async"]
    proc, again = _train(model_dir, tmp_path / "again", "--checkpoint_every_steps=10", steps=2030)
    assert proc.returncode == 0, proc.stderr
    assert again["resumed_from_step"] == 2000 and again["results"]["final_step"] == 2030
    assert not again.get("damaged_checkpoints") and not again.get("warnings")
    assert "checkpoints_not_saved" not in again
    names = {x.rsplit("/", 1)[-1] for x in gcs.list_objects(f"{model_dir}/checkpoints")}
    assert {"ckpt-2020.index", "ckpt-2030.index"} <= names  # max_to_keep=2: the newest two
    assert not any(n.startswith(("ckpt-2000", "ckpt-2010")) for n in names)
    assert _metric_steps(model_dir)[-4:] == [2000, 2010, 2020, 2030]


def test_refused_uploads_are_warnings_and_a_truthful_record_not_a_hang(
    gcs_env, local_gcs, tmp_path
):
    model_dir = f"{BUCKET}/refused-{uuid.uuid4().hex[:8]}"
    local_gcs.fail(r"metrics\.jsonl", 503, method="POST")  # every upload, after retries
    local_gcs.fail(r"checkpoints%2Fckpt-", 403, method="POST")
    proc, record = _train(model_dir, tmp_path, steps=300, env={"GCS_RETRY_CONFIG_MAX_RETRIES": "2"})
    local_gcs.faults.clear()
    assert proc.returncode == 0, proc.stderr  # the measurements stand
    assert record["status"] == "ok" and record["results"]["final_step"] == 300
    warnings = [x for x in proc.stderr.splitlines() if "warning:" in x]
    assert "Traceback" not in proc.stderr
    metrics = [x for x in warnings if "metrics not written" in x]
    assert len(metrics) == 1 and model_dir in metrics[0] and "503" in metrics[0], warnings
    last = [x for x in warnings if "last metrics could not be written" in x]
    assert len(last) == 1, warnings
    saved = [x for x in warnings if re.search(r"checkpoint at step 300 not saved", x)]
    assert len(saved) == 1 and "403" in saved[0], warnings
    assert record["checkpoints_not_saved"] == [300]
    assert record["metric_write_errors"] and all("503" in e for e in record["metric_write_errors"])
    assert len(record["warnings"]) == len(warnings)
    assert not any("/checkpoints/ckpt-300" in x for x in gcs.list_objects(model_dir))
