"""`--xla` on one device compiles the whole train step, optimizer update included.

The losses of a few steps match the uncompiled step's; across replicas
(MirroredStrategy) only each replica's forward and backward pass is
compiled, and the record says which (`xla_scope`).
"""

from __future__ import annotations

import pytest
import tensorflow as tf
from conftest import one_line_error, run_cli

from tpubench.core.precision import Precision
from tpubench.model import registry
from tpubench.run import runner as runner_lib

NO_DROPOUT = {"mnist_mlp": {"dropout": "0.0"}}


def _losses(name, precision, strategy, xla):
    spec = registry.get(name)
    # No dropout: XLA draws its masks with other random kernels.
    params = registry.resolve_params(spec, NO_DROPOUT.get(name, {}), tiny=True)
    params.update(global_batch_size=16, per_replica_batch_size=16, seed=3)
    runner = runner_lib.Runner(spec, params, strategy, Precision(precision), xla=xla)
    features, labels = spec.element_spec(params)
    x = tf.random.stateless_normal([16, *features.shape], seed=[1, 2])
    y = tf.random.stateless_uniform([16], seed=[3, 4], maxval=10, dtype=labels.dtype)
    loop = runner.make_train_loop(lambda: (x, y))
    return runner, [float(loop(tf.constant(2))[0]) for _ in range(3)]


_TOLERANCE = {"fp32": 1e-4, "fp16": 2e-3}


@pytest.mark.parametrize(("name", "precision"), [("mnist_mlp", "fp32"), ("resnet50", "fp16")])
def test_the_compiled_step_trains_like_the_plain_one(name, precision):
    one = tf.distribute.OneDeviceStrategy("/cpu:0")
    plain_runner, plain = _losses(name, precision, one, xla=False)
    runner, compiled = _losses(name, precision, one, xla=True)
    assert plain_runner.xla_scope is None
    assert runner.xla_scope == "step"
    # fp16 keeps 11 significant bits (about 5e-4 apart): XLA's fused kernels
    # round its activations in another order, so agree to a few of its steps.
    assert compiled == pytest.approx(plain, rel=_TOLERANCE[precision])
    assert compiled[-1] < compiled[0], "six updates lower the loss on one batch"
    # The update really is inside the compiled function: no optimizer kernel
    # is left in the loop's own graph, only the call of the XLA cluster.
    graph = runner.train_loop.get_concrete_function(tf.TensorSpec([], tf.int32)).graph
    outer = {n.op for n in graph.as_graph_def().node}
    assert not any(op.startswith("ResourceApply") for op in outer)


@pytest.mark.parametrize("name", ["mnist_mlp", "resnet50"])
def test_across_replicas_only_the_pass_is_compiled(name):
    """MirroredStrategy: batch-norm statistics update inside the compiled pass (it crashed)."""
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0"])
    runner, losses = _losses(name, "fp32", mirrored, xla=True)
    assert runner.xla_scope == "forward_backward"
    _, plain = _losses(name, "fp32", mirrored, xla=False)
    assert losses == pytest.approx(plain, rel=1e-4)


def test_the_record_says_what_xla_compiled(tmp_path):
    common = ["--tiny", "--use_synthetic_data", "--train_steps=2", "--xla"]
    proc, rec = run_cli("train", *common, results_dir=tmp_path / "one")
    assert proc.returncode == 0, proc.stderr
    assert rec["xla_scope"] == "step"
    assert "fp32, XLA, global batch" in proc.stdout


@pytest.mark.slow
def test_xla_trains_batch_norm_nets_across_replicas(tmp_path):
    """Batch-norm statistics updated inside a compiled replica step (no merge_call there)."""
    common = [
        "--model=resnet50",
        "--tiny",
        "--use_synthetic_data",
        "--batch_size=8",
        "--seed=7",
        "--train_steps=2",
        "--num_cpu_devices=2",
    ]
    proc, plain = run_cli("train", *common, results_dir=tmp_path / "plain")
    assert proc.returncode == 0, proc.stderr
    proc, compiled = run_cli("train", *common, "--xla", results_dir=tmp_path / "xla")
    assert proc.returncode == 0, proc.stderr
    assert compiled["xla_scope"] == "forward_backward"
    assert compiled["placement"]["num_replicas"] == 2
    loss = compiled["results"]["final_loss"]
    assert loss == pytest.approx(plain["results"]["final_loss"], rel=1e-4)
    # Synchronised batch norm all-reduces inside the step: not compilable, said in one line.
    proc, _ = run_cli(
        "train", *common, "--xla", "--params=sync_batch_norm=true", results_dir=tmp_path / "sync"
    )
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "--xla with --params sync_batch_norm=true on 2 replicas" in line
