"""Metric writers: what lands in metrics.jsonl and in TensorBoard event files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tpubench.storage import writers


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


def test_a_run_writes_what_tensorboard_shows(tmp_path):
    """A tiny CLI run, read back with TensorBoard's own reader: the scalars and the HParams."""
    from conftest import run_cli
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.plugins.hparams import metadata as hparams_metadata

    model_dir = tmp_path / "md"
    proc, record = run_cli(
        "train",
        "--model=mnist_mlp",
        "--tiny",
        "--train_steps=30",
        "--steps_per_loop=5",
        "--peak_flops=1e15",  # a fixed peak: the MFU below is rate x FLOPs / 1e15
        f"--model_dir={model_dir}",
        results_dir=tmp_path / "runs",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    acc = event_accumulator.EventAccumulator(
        str(model_dir / "tensorboard"), size_guidance={event_accumulator.TENSORS: 0}
    )
    acc.Reload()

    def series(tag):
        import tensorflow as tf

        return [(e.step, float(tf.make_ndarray(e.tensor_proto))) for e in acc.Tensors(tag)]

    batch = record["global_batch_size"]
    steps, step = [], 0
    for n, _ in record["results"]["loops"]:
        step += n
        steps.append(step)
    rates = [n * batch / s for n, s in record["results"]["loops"]]
    got = series(writers.EXAMPLES_PER_SEC)
    assert [s for s, _ in got] == steps == [5, 10, 15, 20, 25, 30]
    assert [v for _, v in got] == pytest.approx(rates, rel=1e-3)
    step_times = [s / n for n, s in record["results"]["loops"]]
    assert [v for _, v in series(writers.STEP_TIME)] == pytest.approx(step_times, rel=1e-3)
    lr = record["model"]["params"]["learning_rate"]
    assert series(writers.LEARNING_RATE) == [(s, pytest.approx(lr)) for s in steps]
    flops = record["mfu"]["train_flops_per_example"]
    mfu = [100 * r * flops / 1e15 for r in rates]
    assert [v for _, v in series(writers.MFU)] == pytest.approx(mfu, rel=1e-3)
    cpu = series(writers.HOST_CPU)
    assert cpu and all(0 <= v <= 100 for _, v in cpu)
    assert [s for s, _ in series("eval/accuracy")] == [30]

    content = acc.SummaryMetadata("_hparams_/session_start_info").plugin_data.content
    info = hparams_metadata.parse_session_start_info_plugin_data(content)
    hp = {
        k: v.WhichOneof("kind") and getattr(v, v.WhichOneof("kind"))
        for k, v in info.hparams.items()
    }
    assert info.group_name == record["run_id"]
    assert hp["model"] == "mnist_mlp" and hp["tiny"] is True and hp["precision"] == "fp32"
    assert hp["global_batch_size"] == batch and hp["dataset"] == record["data"]["name"]
    assert hp["steps_per_loop"] == 5 and hp["train_steps"] == 30
    assert hp["accelerator"] == record["placement"]["accelerator"]
