"""Where the synchronous parameter server's variables, gradient sums and updates run.

tf_cnn_benchmarks' `--local_parameter_device=gpu` put each variable on the
training GPU holding the fewest elements so far and summed and applied each
gradient there; `--local_parameter_device=cpu` did both on the host CPU.
Here on 3 logical CPU devices: the host is CPU:0, the two training devices
CPU:1 and CPU:2 stand in for GPUs.  The traced train loop of the real
Runner is read op by op (the devices TensorFlow was asked for, including
those an update inherits from its variable).  A mirrored strategy on the
same devices is the control that the checks can fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tpubench.hardware import central_storage

_PROBE = textwrap.dedent(
    """
    import json, sys
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 3)
    from tpubench.hardware import central_storage
    from tpubench.model import registry
    from tpubench.run import runner as runner_lib

    def short(device):
        spec = tf.DeviceSpec.from_string(device)
        return f"{spec.device_type}:{spec.device_index}" if spec.device_type else ""

    def probe(strategy):
        spec = registry.get("mnist_mlp")
        params = registry.resolve_params(spec, {}, tiny=True)
        params.update(per_replica_batch_size=8, global_batch_size=16, seed=0)
        runner = runner_lib.Runner(spec, params, strategy, optimizer="sgd")
        fixed = runner.synthetic_inputs(0)
        loop = runner.make_train_loop(lambda: fixed)
        losses = [float(x) for x in loop(tf.constant(2))]
        graph = loop.get_concrete_function(tf.TensorSpec([], tf.int32)).graph.as_graph_def()
        bodies = [graph.node] + [f.node_def for f in graph.library.function]
        nodes = [
            [n.op, n.name, short(n.device), [i.split(":")[0].lstrip("^") for i in n.input]]
            for body in bodies for n in body
        ]
        variables = [
            [v.path, int(v.shape.num_elements()),
             [short(c.device) for c in strategy.experimental_local_results(v.value)]]
            for v in runner.model.trainable_variables
        ]
        return {"losses": losses, "variables": variables, "nodes": nodes}

    devices = ["/cpu:1", "/cpu:2"]
    print(json.dumps({
        "ps_gpu": probe(central_storage.strategy(devices, "gpu")),
        "ps_cpu": probe(central_storage.strategy(devices, "cpu")),
        "mirrored": probe(tf.distribute.MirroredStrategy(devices)),
    }))
    """
)


@pytest.fixture(scope="module")
def probes():
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _gradient_sums(nodes):
    """The AddN ops that sum a gradient over the replicas (the loss's sum is not one)."""
    return [n for n in nodes if n[0] == "AddN" and all("gradient_tape" in i for i in n[3])]


def _updates(nodes):
    return [n for n in nodes if n[0] in ("AssignSubVariableOp", "ResourceApplyGradientDescent")]


def _per_device(nodes) -> dict:
    out: dict = {}
    for n in nodes:
        out[n[2]] = out.get(n[2], 0) + 1
    return out


def violations(probe, variable_devices: set[str]) -> list[str]:
    """What in PROBE breaks the parameter server's placement (empty: nothing)."""
    found = []
    homes = {}
    for path, _, copies in probe["variables"]:
        if len(copies) != 1:
            found.append(f"{path} has {len(copies)} copies ({', '.join(copies)})")
        homes[path] = copies[0]
    if set(homes.values()) != variable_devices:
        found.append(f"the variables live on {sorted(set(homes.values()))}")
    held = _per_device([[None, None, d] for d in homes.values()])
    sums, updates = _gradient_sums(probe["nodes"]), _updates(probe["nodes"])
    if _per_device(sums) != held:
        found.append(f"gradient sums per device {_per_device(sums)}, variables {held}")
    if _per_device(updates) != held:
        found.append(f"updates per device {_per_device(updates)}, variables {held}")
    # A summed gradient goes straight to its update: no op elsewhere reads it.
    where = {n[1]: n[2] for n in probe["nodes"]}
    for s in sums:
        readers = {where[n[1]] for n in probe["nodes"] if s[1] in n[3]}
        if readers - {s[2]}:
            found.append(f"the sum {s[1]} on {s[2]} is read on {sorted(readers - {s[2]})}")
    return found


def test_ps_gpu_spreads_the_variables_by_size_and_sums_and_updates_each_on_its_device(probes):
    probe = probes["ps_gpu"]
    assert violations(probe, {"CPU:1", "CPU:2"}) == []
    homes = {path: copies[0] for path, _, copies in probe["variables"]}
    # mnist_mlp (tiny): the first kernel (784x32, 25,088 elements) takes CPU:1; every
    # later variable goes to CPU:2, which never catches up.
    assert homes["dense/kernel"] == "CPU:1"
    assert {d for p, d in homes.items() if p != "dense/kernel"} == {"CPU:2"}
    assert probe["losses"][0] == pytest.approx(probes["mirrored"]["losses"][0], rel=1e-5)


def test_ps_cpu_keeps_the_variables_sums_and_updates_on_the_host_with_no_trip_out(probes):
    probe = probes["ps_cpu"]
    assert violations(probe, {"CPU:0"}) == []
    assert len(_gradient_sums(probe["nodes"])) == len(probe["variables"]) == 6
    assert probe["losses"] == pytest.approx(probes["mirrored"]["losses"], rel=1e-5)


def test_the_checks_fail_on_a_mirrored_strategy(probes):
    """The control: replicated variables, one sum broadcast back, an update on each device."""
    found = violations(probes["mirrored"], {"CPU:1", "CPU:2"})
    assert any("has 2 copies" in line for line in found)
    assert any(line.startswith("updates per device") for line in found)


def test_spread_puts_each_variable_on_the_least_loaded_device_ties_to_the_first():
    spread = central_storage.Spread(["a", "b", "c"])
    chosen = [spread.choose(n) for n in (100, 10, 10, 5, 200, 1)]
    assert chosen == ["a", "b", "c", "b", "c", "b"]
    assert spread.loads == [100, 16, 210]
