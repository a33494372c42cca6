"""Metric writers: what lands in metrics.jsonl and in TensorBoard event files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tpubench import writers


def _lines(path):
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_jsonl_writes_one_line_per_write(tmp_path):
    path = tmp_path / "metrics.jsonl"
    w = writers.JsonlWriter(str(path))
    w.write_scalars(10, {writers.LOSS: np.float32(2.5), writers.EXAMPLES_PER_SEC: 100})
    w.write_scalars(20, {writers.LOSS: 1.25})
    w.close()
    rows = _lines(path)
    assert [r["step"] for r in rows] == [10, 20]
    assert rows[0][writers.LOSS] == 2.5 and rows[0][writers.EXAMPLES_PER_SEC] == 100.0
    assert rows[1][writers.LOSS] == 1.25
    assert all(r["time"] > 1e9 for r in rows), "wall-clock seconds since the epoch"


def test_jsonl_flush_makes_lines_visible_and_close_writes_the_rest(tmp_path):
    path = tmp_path / "metrics.jsonl"
    w = writers.JsonlWriter(str(path))
    w.write_scalars(1, {"a": 1.0})
    w.flush()
    assert [r["step"] for r in _lines(path)] == [1]
    w.flush()  # nothing new: nothing duplicated
    w.write_scalars(2, {"a": 2.0})
    w.close()
    assert [r["step"] for r in _lines(path)] == [1, 2]


def test_jsonl_reopened_keeps_earlier_lines(tmp_path):
    """A resumed run continues the same metrics.jsonl."""
    path = tmp_path / "metrics.jsonl"
    first = writers.JsonlWriter(str(path))
    first.write_scalars(1, {"a": 1.0})
    first.close()
    second = writers.JsonlWriter(str(path))
    second.write_scalars(2, {"a": 2.0})
    second.close()
    assert [(r["step"], r["a"]) for r in _lines(path)] == [(1, 1.0), (2, 2.0)]


def _tensorboard_scalars(logdir):
    import tensorflow as tf

    out = {}
    for event_file in sorted(logdir.glob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(event_file)):
            for value in event.summary.value:
                out.setdefault(value.tag, []).append(
                    (event.step, float(tf.make_ndarray(value.tensor)))
                )
    return out


def test_tensorboard_events_hold_the_scalars(tmp_path):
    logdir = tmp_path / "tensorboard"
    w = writers.TensorBoardWriter(str(logdir))
    w.write_scalars(1, {writers.LOSS: 2.0, writers.EVAL_PREFIX + "accuracy": 0.5})
    w.write_scalars(2, {writers.LOSS: 1.5})
    w.close()
    scalars = _tensorboard_scalars(logdir)
    assert scalars[writers.LOSS] == [(1, 2.0), (2, 1.5)]
    assert scalars["eval/accuracy"] == [(1, 0.5)]


def test_multi_writer_fans_out_and_null_writer_writes_nothing(tmp_path):
    path = tmp_path / "m.jsonl"
    logdir = tmp_path / "tb"
    w = writers.MultiWriter(
        [
            writers.JsonlWriter(str(path)),
            writers.TensorBoardWriter(str(logdir)),
            writers.NullWriter(),
        ]
    )
    w.write_scalars(7, {writers.STEP_TIME: 0.25})
    w.close()
    assert _lines(path)[0][writers.STEP_TIME] == 0.25
    assert _tensorboard_scalars(logdir)[writers.STEP_TIME] == [(7, pytest.approx(0.25))]
    null = writers.NullWriter()
    null.write_scalars(1, {"a": 1.0})
    null.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.jsonl", "tb"]
