"""After kill -9 and resume, metrics.jsonl and TensorBoard hold each step once,
in order, each line naming its run (issue 11, item 5)."""

import signal

import livecli
from conftest import metrics_lines, run_cli


def _tensorboard_steps(logdir) -> list[int]:
    import tensorflow as tf

    steps = []
    for path in sorted(tf.io.gfile.glob(str(logdir / "events.out.tfevents.*"))):
        for raw in tf.data.TFRecordDataset(path):
            event = tf.compat.v1.Event.FromString(raw.numpy())
            steps += [event.step for v in event.summary.value if v.tag == "train/loss"]
    return steps


def test_a_resumed_run_drops_what_the_killed_run_wrote_past_its_checkpoint(tmp_path):
    model_dir, results = tmp_path / "model", tmp_path / "runs"
    common = ["--tiny", "--use_synthetic_data", "--checkpoint_every_steps=7", "--log_every_secs=1"]
    first = livecli.start(
        "train", *common, "--train_steps=10000000", f"--model_dir={model_dir}",
        f"--results_dir={results}",
    )  # fmt: skip
    livecli.wait_for(
        lambda: (model_dir / "metrics.jsonl").exists() and len(metrics_lines(model_dir)) > 30,
        first,
    )
    first.send_signal(signal.SIGKILL)
    first.wait()
    killed = metrics_lines(model_dir)
    last = max(x["step"] for x in killed)
    total = last + 20
    again, record = run_cli(
        "train", *common, f"--train_steps={total}", f"--model_dir={model_dir}",
        results_dir=tmp_path / "again",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    resumed = record["resumed_from_step"]
    assert resumed % 7 == 0 and 0 < resumed <= last

    lines = metrics_lines(model_dir)
    assert [x["step"] for x in lines] == list(range(1, total + 1))  # once each, in order
    first_id = killed[0]["run_id"]
    assert {x["run_id"] for x in lines if x["step"] <= resumed} == {first_id}
    assert {x["run_id"] for x in lines if x["step"] > resumed} == {record["run_id"]}
    assert sorted(_tensorboard_steps(model_dir / "tensorboard")) == list(range(1, total + 1))
