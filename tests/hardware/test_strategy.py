"""Which strategy and accelerator a configuration resolves to (no devices configured).

Logical CPU devices can be configured only once per process, so anything
that builds a strategy runs through the CLI in a subprocess.
"""

from __future__ import annotations

import json

import pytest
from conftest import one_line_error, run_cli

from tpubench.core import errors
from tpubench.core.config import HardwareConfig
from tpubench.hardware import clusters, placement, strategy


@pytest.fixture
def tf_config(monkeypatch):
    monkeypatch.delenv("TPU_NAME", raising=False)

    def set_cluster(cluster, task=None):
        value = {"cluster": cluster}
        if task:
            value["task"] = task
        monkeypatch.setenv("TF_CONFIG", json.dumps(value))

    monkeypatch.delenv("TF_CONFIG", raising=False)
    return set_cluster


def test_two_workers_resolve_to_multi_worker(tf_config):
    tf_config({"worker": ["localhost:1", "localhost:2"]}, {"type": "worker", "index": 0})
    assert strategy.resolve_strategy(HardwareConfig(), "cpu") == "multi_worker"
    tf_config({"chief": ["localhost:1"], "worker": ["localhost:2"]})
    assert strategy.resolve_strategy(HardwareConfig(), "gpu") == "multi_worker"


def test_a_ps_task_resolves_to_parameter_server(tf_config):
    tf_config({"chief": ["h:1"], "worker": ["h:2", "h:3"], "ps": ["h:4"]}, {"type": "chief"})
    assert strategy.resolve_strategy(HardwareConfig(), "cpu") == "parameter_server"
    assert clusters.ps_server_role(HardwareConfig()) is None, "the chief coordinates"
    tf_config({"chief": ["h:1"], "worker": ["h:2"], "ps": ["h:4"]}, {"type": "ps", "index": 0})
    assert clusters.ps_server_role(HardwareConfig()) == ("ps", 0)
    tf_config({"chief": ["h:1"], "worker": ["h:2"], "ps": ["h:4"]}, {"type": "worker", "index": 0})
    assert clusters.ps_server_role(HardwareConfig()) == ("worker", 0)
    assert clusters.ps_server_role(HardwareConfig(strategy="mirrored")) is None


def test_without_a_cluster_the_device_count_decides(tf_config):
    assert strategy.resolve_strategy(HardwareConfig(), "cpu") == "one_device"
    assert strategy.resolve_strategy(HardwareConfig(num_cpu_devices=2), "cpu") == "mirrored"
    tf_config({"worker": ["localhost:1"]})  # a one-task cluster is a single machine
    assert strategy.resolve_strategy(HardwareConfig(), "cpu") == "one_device"
    assert strategy.resolve_strategy(HardwareConfig(), "tpu") == "tpu"
    assert strategy.resolve_strategy(HardwareConfig(strategy="mirrored"), "cpu") == "mirrored"


def test_accelerator_resolution(tf_config, monkeypatch):
    assert strategy.resolve_accelerator(HardwareConfig(accelerator="gpu")) == "gpu"
    assert strategy.resolve_accelerator(HardwareConfig(tpu="my-tpu")) == "tpu"
    assert strategy.resolve_accelerator(HardwareConfig(strategy="tpu")) == "tpu"
    monkeypatch.setattr(placement, "on_tpu_vm", lambda: False)
    # auto: a visible GPU wins over the CPU (this test runs on both kinds of machine)
    import tensorflow as tf

    expected = "gpu" if tf.config.list_physical_devices("GPU") else "cpu"
    assert strategy.resolve_accelerator(HardwareConfig()) == expected
    monkeypatch.setenv("TPU_NAME", "some-tpu")
    assert strategy.resolve_accelerator(HardwareConfig()) == "tpu"


@pytest.mark.parametrize(
    "raw,needle",
    [("{not json", "not valid JSON"), ('{"task": {}}', '"cluster"'), ("[1]", '"cluster"')],
)
def test_malformed_tf_config(monkeypatch, raw, needle):
    monkeypatch.setenv("TF_CONFIG", raw)
    with pytest.raises(errors.UsageError) as e:
        strategy.resolve_strategy(HardwareConfig(), "cpu")
    assert "TF_CONFIG" in str(e.value) and needle in str(e.value)


def test_one_device_with_two_cpu_devices_is_an_error(tmp_path):
    proc, record = run_cli(
        "train",
        "--strategy=one_device",
        "--num_cpu_devices=2",
        "--tiny",
        "--use_synthetic_data",
        results_dir=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert "one_device" in line and "mirrored" in line
    assert record["status"] == "failed"


def test_only_host_zero_of_a_tpu_pod_is_chief(monkeypatch):
    for var in ("CLOUD_TPU_TASK_ID", "TPU_WORKER_ID"):
        monkeypatch.delenv(var, raising=False)
    assert clusters.tpu_host_index() == 0
    monkeypatch.setenv("TPU_WORKER_ID", "3")
    assert clusters.tpu_host_index() == 3
    monkeypatch.setenv("CLOUD_TPU_TASK_ID", "1")
    assert clusters.tpu_host_index() == 1


_REDUCE = """
import json
from tpubench.core.config import HardwareConfig
from tpubench.hardware import strategy
import tensorflow as tf

out = {}
for how in ("reduce_to_one", "reduce_to_cpu", "hierarchical_copy"):
    hw = HardwareConfig(accelerator="cpu", strategy="mirrored", all_reduce=how, num_cpu_devices=2)
    if not out:
        strategy.configure_host(hw)
    s, placement = strategy.build(hw)
    ops = s.extended._cross_device_ops
    rank = lambda: tf.distribute.get_replica_context().replica_id_in_sync_group  # noqa: E731
    per_replica = s.run(lambda: tf.cast(rank() + 1, tf.float32))
    total = s.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
    out[how] = [placement.all_reduce, float(total), getattr(ops, "reduce_to_device", None)]
print(json.dumps(out))
"""


def test_cpu_aggregation_reduces_on_the_host_cpu():
    """--all_reduce=reduce_to_cpu is the seeds' "CPU aggregation": TensorFlow's reduce_to_one
    sums on the first replica's device (GPU 0 on a GPU host) unless told the CPU."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", _REDUCE], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["reduce_to_cpu"] == ["reduce_to_cpu", 3.0, "/cpu:0"]
    assert out["reduce_to_one"][:2] == ["reduce_to_one", 3.0]
    assert out["reduce_to_one"][2] is None  # the first destination device, not the CPU
    assert out["hierarchical_copy"][:2] == ["hierarchical_copy", 3.0]
