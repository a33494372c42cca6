"""The seeds' synchronous, in-process parameter server (`--strategy=central_storage`).

tf_cnn_benchmarks' `--variable_update=parameter_server` keeps one copy of
each variable; every GPU computes its gradients, and each gradient is summed
and applied where its variable lives:

- `--local_parameter_device=cpu` (here `--parameter_device=cpu`): every
  variable on the host CPU, where the sums and the updates run;
- `--local_parameter_device=gpu` (its default; here `--parameter_device=gpu`):
  each variable on the training GPU holding the fewest elements so far, in
  the order the model creates them (its `ParamServerDeviceSetter`), and each
  gradient summed and applied on its variable's GPU; nothing goes through the
  host.

TensorFlow 2's CentralStorageStrategy keeps the one copy, on one device,
and sums every gradient on the host CPU.  `strategy` builds it with the
variables placed as above; run/central_step.py sums and applies each
gradient on its variable's device.
"""

from __future__ import annotations

import contextlib
import functools

from tpubench.hardware import placement

HOST = "/cpu:0"


class Spread:
    """Puts each new variable on the device that holds the fewest elements so far.

    Ties go to the earlier device, so a model is placed the same way every run.
    """

    def __init__(self, devices):
        self.devices = tuple(devices)
        self.loads = [0] * len(self.devices)

    def choose(self, elements: int) -> str:
        i = min(range(len(self.loads)), key=self.loads.__getitem__)
        self.loads[i] += elements
        return self.devices[i]


def _elements(kwargs) -> int:
    """Elements of the variable KWARGS describe (its `initial_value` as given)."""
    tf = placement.tf()
    value = kwargs.get("initial_value")
    shape = kwargs.get("shape")
    if shape is not None and tf.TensorShape(shape).is_fully_defined():
        return int(tf.TensorShape(shape).num_elements())
    if callable(value):
        # An initializer: run it once here and hand the variable its value.
        value = kwargs["initial_value"] = value()
    if value is None:
        return 1
    return int(tf.convert_to_tensor(value).shape.num_elements() or 1)


def _spread_variables(extended, spread: Spread) -> None:
    """Makes EXTENDED (CentralStorageStrategy's) place each variable by SPREAD.

    The strategy creates every variable under `tf.device(_variable_device)`;
    it is set per variable here.  Optimizer slots ask to sit with their
    variable (`colocate_with`) and go where it went, counted in no load.
    """
    create = extended._create_variable

    def placed(next_creator, **kwargs):
        if "colocate_with" not in kwargs:
            extended._variable_device = spread.choose(_elements(kwargs))
        return create(next_creator, **kwargs)

    extended._create_variable = placed


def _state_aggregation(next_creator, **kwargs):
    """Gives replica-updated state one aggregation, so its single copy can take the update.

    Under CentralStorageStrategy each variable is one copy, and a replica's
    assign to it needs an aggregation.  Keras 3 creates state with none:
    Dropout's seed generator (an integer counter: the first replica's value)
    and batch-norm statistics of Keras layers (floats: the replicas' mean).
    """
    tf = placement.tf()
    if not kwargs.get("trainable", True) and kwargs.get("aggregation") in (
        None,
        tf.VariableAggregation.NONE,
    ):
        dtype = kwargs.get("dtype")
        floating = dtype is not None and tf.as_dtype(dtype).is_floating
        kwargs["aggregation"] = (
            tf.VariableAggregation.MEAN if floating else tf.VariableAggregation.ONLY_FIRST_REPLICA
        )
    return next_creator(**kwargs)


@functools.cache
def _strategy_class():
    """CentralStorageStrategy whose scope creates state with `_state_aggregation`.

    Defined on first use: this module imports without TensorFlow.  From the
    cross-replica context (run/central_step.py applies the summed gradients
    there) an optimizer's update goes straight to `extended.update`, which
    runs it on the variable's device, instead of asking for a replica's
    merge call.
    """
    tf = placement.tf()

    class CentralStorage(tf.distribute.experimental.CentralStorageStrategy):
        def __init__(self, compute_devices, parameter_device):
            super().__init__(compute_devices=compute_devices, parameter_device=parameter_device)
            self.extended._use_merge_call = lambda: not tf.distribute.in_cross_replica_context()

        @contextlib.contextmanager
        def scope(self):
            with super().scope(), tf.variable_creator_scope(_state_aggregation):
                yield

    return CentralStorage


def strategy(compute_devices, variables: str):
    """A central-storage strategy training on COMPUTE_DEVICES.

    VARIABLES: "cpu" keeps every variable on the host CPU; "gpu" spreads them
    over COMPUTE_DEVICES by size (`Spread`).
    """
    devices = list(compute_devices)
    if variables == "cpu":
        return _strategy_class()(compute_devices=devices, parameter_device=HOST)
    built = _strategy_class()(compute_devices=devices, parameter_device=devices[0])
    _spread_variables(built.extended, Spread(built.extended.worker_devices))
    return built


def build(hw, accelerator: str, devices: list[str]):
    """(strategy, Placement) for --strategy=central_storage on DEVICES."""
    where = hw.parameter_device or "cpu"  # refused combinations: placement.check_applicable
    built = strategy(devices, where)
    tf = placement.tf()
    canonical = tuple(built.extended.worker_devices)
    return built, placement.Placement(
        accelerator,
        "central_storage",
        built.num_replicas_in_sync,
        tuple(devices),
        "on_variable_device",
        parameter_device=where,
        variable_device=tf.DeviceSpec.from_string(HOST).to_string() if where == "cpu" else None,
        variable_devices=canonical if where == "gpu" else None,
    )


def variable_load(variables) -> dict[str, int]:
    """{device: elements} of VARIABLES (tf or Keras) as placed (`placement.variable_load`)."""
    load: dict[str, int] = {}
    for v in (getattr(v, "value", v) for v in variables):  # a Keras variable: its tf.Variable
        elements = v.shape.num_elements() or 1
        load[v.device] = load.get(v.device, 0) + int(elements)
    return dict(sorted(load.items()))


def recorded(placement, model) -> dict:
    """The record's placement additions: central storage's `variable_load` ({} otherwise)."""
    if placement.strategy != "central_storage":
        return {}
    return {"variable_load": variable_load(model.variables)}
