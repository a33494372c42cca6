"""A model written once trains the same on 1, 2 and 4 replicas.

Every registered model runs one synthetic step on 1 replica and on 2 and 4
logical CPU devices (`--num_cpu_devices=N`, MirroredStrategy).  The same
global batch split over N replicas must give the same loss at the initial
weights: a per-replica loss scaled by the wrong batch, a replica seeing other
examples, or weights initialised per replica all show up as a different
number.
"""

from __future__ import annotations

import functools

import pytest
from conftest import metrics_lines, run_cli

from tpubench.model import registry

# Per model, the --params that remove randomness which legitimately differs
# per replica, so 1 and N replicas must agree exactly (up to float32 sums).
# A new model needs an entry here: say "" if it has no such randomness.
DETERMINISTIC_PARAMS = {
    # The image models (dropout, and batch norm in ResNet and Inception).
    "resnet152": "sync_batch_norm=true",
    "inception_v3": "sync_batch_norm=true,dropout=0.0",
    "vgg16": "dropout=0.0",
    "alexnet": "dropout=0.0",
    "googlenet": "dropout=0.0",
    "mnist_cnn": "conv_dropout=0.0,dense_dropout=0.0",
    # Dropout masks are drawn per replica from per-replica seeds.
    "mnist_mlp": "dropout=0.0",
    "cifar10_cnn": "conv_dropout=0.0,dense_dropout=0.0",
    # Batch norm normalises by per-replica batch statistics unless synchronised.
    "resnet50": "sync_batch_norm=true",
    "imdb_fasttext": "",
    "imdb_bilstm": "dropout=0.0",
    "bilstm1024": "",
    "lstm_textgen": "",
    "ptb_lstm": "",  # dropout is 0 in the small configuration
    "bert_base": "dropout=0.0",
}

COMMON = ["--tiny", "--use_synthetic_data", "--batch_size=8", "--seed=7"]
# Float32 sums in a different order differ around 1e-7; any real mismatch
# (wrong loss scaling, different examples, different weights) is >= 1e-3.
REL = 1e-5


def _train(tmp_path_factory, model: str, replicas: int, steps: int = 1) -> dict:
    out = tmp_path_factory.mktemp(f"{model}-{replicas}r-{steps}s")
    args = [
        "train",
        f"--model={model}",
        f"--train_steps={steps}",
        f"--num_cpu_devices={replicas}",
        f"--model_dir={out / 'model'}",
        *COMMON,
    ]
    if DETERMINISTIC_PARAMS[model]:
        args.append(f"--params={DETERMINISTIC_PARAMS[model]}")
    proc, record = run_cli(*args, results_dir=out / "runs", timeout=400)
    assert proc.returncode == 0, proc.stderr
    assert record is not None and record["status"] == "ok", proc.stderr
    record["_model_dir"] = out / "model"
    return record


@pytest.fixture(scope="module")
def one_replica(tmp_path_factory):
    """The 1-replica run of each model, made once and shared by its comparisons."""
    return functools.cache(lambda model: _train(tmp_path_factory, model, 1))


def _needs_params(model):
    if model not in DETERMINISTIC_PARAMS:
        pytest.fail(
            f"model {model!r} has no entry in DETERMINISTIC_PARAMS (tests/model/test_replicas.py): "
            "add the --params that switch off its per-replica randomness, or ''"
        )


def test_every_registered_model_has_an_entry():
    missing = sorted(set(registry.names()) - set(DETERMINISTIC_PARAMS))
    assert not missing, f"add {missing} to DETERMINISTIC_PARAMS in tests/model/test_replicas.py"


# Replica counts whose comparison runs only under `make test-slow`, per model:
# the runner traces the tiny net once per replica (tens of seconds on 2
# cores for deep nets), and the default suite already runs the same code at
# 2 replicas, or for resnet152 in resnet50 (one builder, other block counts).
# inception_v3 at 2 replicas: 35-90 s (41 synchronised batch norms).
SLOW_REPLICAS = {
    "resnet152": {2, 4},
    "inception_v3": {2, 4},
    "googlenet": {4},
    "vgg16": {4},
    "alexnet": {4},
    "mnist_cnn": {4},
    # The 4-replica runs of the deeper nets (10-19 s each on 2 cores; their
    # 2-replica runs stay in the default suite, mnist_mlp and the fastText
    # model keep 4 replicas there).
    "resnet50": {4},
    "bert_base": {4},
    "bilstm1024": {4},
    "imdb_bilstm": {4},
    "ptb_lstm": {4},
}


def _one_replica_cases():
    # A model compared on no replica count in the default suite keeps its
    # 1-replica CLI run for `make test-slow` too: the default suite trains
    # its tiny net in-process (tests/models/test_image_models.py).
    for model in registry.names():
        slow = SLOW_REPLICAS.get(model, set()) >= {2, 4}
        yield pytest.param(model, marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("model", _one_replica_cases())
def test_one_replica_trains(model, one_replica):
    _needs_params(model)
    rec = one_replica(model)
    assert rec["placement"]["num_replicas"] == 1
    assert rec["placement"]["strategy"] == "one_device"
    assert rec["global_batch_size"] == 8
    assert rec["results"]["final_step"] == 1
    assert rec["results"]["final_loss"] > 0


def _replica_cases():
    for model in registry.names():
        for replicas in (2, 4):
            slow = replicas in SLOW_REPLICAS.get(model, ())
            yield pytest.param(model, replicas, marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize(("model", "replicas"), _replica_cases())
def test_first_step_loss_matches_one_replica(model, replicas, one_replica, tmp_path_factory):
    _needs_params(model)
    base = one_replica(model)
    rec = _train(tmp_path_factory, model, replicas)
    assert rec["placement"]["num_replicas"] == replicas
    assert rec["placement"]["strategy"] == "mirrored"
    assert len(rec["placement"]["devices"]) == replicas
    assert rec["global_batch_size"] == 8
    assert rec["per_replica_batch_size"] == 8 // replicas
    assert rec["results"]["final_step"] == 1
    assert rec["results"]["final_loss"] == pytest.approx(base["results"]["final_loss"], rel=REL), (
        f"{model}: first-step loss on {replicas} replicas differs from 1 replica"
    )


def test_three_steps_agree_on_one_and_two_replicas(tmp_path_factory):
    """Training, not only the forward pass: after 2 updates the losses still agree."""
    one = _train(tmp_path_factory, "mnist_mlp", 1, steps=3)
    two = _train(tmp_path_factory, "mnist_mlp", 2, steps=3)
    assert two["placement"]["num_replicas"] == 2
    for rec in (one, two):
        assert rec["results"]["final_step"] == 3
        assert [s for s, _ in rec["results"]["loops"]] == [1, 1, 1]
    # metrics.jsonl holds one mean loss per loop (one step each here).
    curve = {
        n: [row["train/loss"] for row in metrics_lines(rec["_model_dir"]) if "train/loss" in row]
        for n, rec in (("one", one), ("two", two))
    }
    assert len(curve["one"]) == len(curve["two"]) == 3
    assert curve["two"] == pytest.approx(curve["one"], rel=1e-3)
    assert curve["one"][-1] < curve["one"][0], "three RMSprop steps on one batch lower its loss"
    assert two["results"]["final_loss"] == pytest.approx(one["results"]["final_loss"], rel=1e-3)
