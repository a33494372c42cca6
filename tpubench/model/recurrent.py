"""Which recurrent implementation ran, and honest FLOPs for recurrent models.

Model files use plain Keras 3 `LSTM`/`GRU` layers and never name a device.
Keras then picks the implementation per run: the fused cuDNN kernel when a
GPU is visible and the layer meets cuDNN's conditions (tanh activation,
sigmoid recurrent activation, no recurrent dropout, unroll=False, a bias,
use_cudnn not False; GRU also reset_after=True), else its generic loop (a
`tf.while_loop` over time steps with one fused 4-gate matmul per step),
which is also what XLA compiles on TPU.  The CPU-vs-GPU study saw a GPU
lose to every CPU on a bidirectional LSTM because its Keras of 2017 had no
such automatic choice.

The recurrent models take a `cudnn` hyperparameter (`use_cudnn` below):
true, the default, lets Keras pick as above; `--params=cudnn=false` never
takes the cuDNN kernel, so a GPU runs the generic loop as 2017's Keras did
(on CPU and TPU it changes nothing: cuDNN is GPU-only).

`describe` records which implementation the traced training step really
contains (a CudnnRNN op or not) and, per layer, whether the cuDNN conditions
hold, so a run record says why a GPU did or did not get the fast kernel.
"""

from __future__ import annotations

CUDNN_OPS = frozenset({"CudnnRNN", "CudnnRNNV2", "CudnnRNNV3"})
CUDNN_PARAM = "cudnn"  # the recurrent models' hyperparameter: --params=cudnn=false
# Each condition: config key and the values cuDNN accepts.
_CONDITIONS = {
    "activation": ("tanh",),
    "recurrent_activation": ("sigmoid",),
    "recurrent_dropout": (0, 0.0),
    "unroll": (False,),
    "use_bias": (True,),
    "use_cudnn": ("auto", True),
}


def use_cudnn(params) -> str | bool:
    """Keras' `use_cudnn` for a model's LSTM/GRU layers, from its `cudnn` hyperparameter.

    True (the default): "auto", the fused cuDNN kernel where a GPU is visible
    and the layer meets cuDNN's conditions.  False: never, Keras's generic
    loop on every device (what 2017's Keras ran on a GPU).
    """
    return "auto" if params.get(CUDNN_PARAM, True) else False


def rnn_layers(model) -> list:
    """The LSTM/GRU layers of MODEL (inside Bidirectional wrappers and nested models)."""
    import keras

    found = []

    def visit(layer):
        if isinstance(layer, keras.layers.Bidirectional):
            visit(layer.forward_layer)
            visit(layer.backward_layer)
        elif isinstance(layer, (keras.layers.LSTM, keras.layers.GRU)):
            found.append(layer)
        elif hasattr(layer, "layers"):
            for sub in layer.layers:
                visit(sub)

    visit(model)
    return found


def cudnn_conditions(layer) -> dict[str, bool]:
    """Condition -> whether LAYER's config meets cuDNN's requirement."""
    import keras

    # use_cudnn is an attribute that Keras leaves out of get_config().
    config = layer.get_config() | {"use_cudnn": getattr(layer, "use_cudnn", "auto")}
    out = {key: config.get(key) in accepted for key, accepted in _CONDITIONS.items()}
    if isinstance(layer, keras.layers.GRU):
        out["reset_after"] = bool(config.get("reset_after"))
    return out


def describe(model, op_types: set[str] | None, accelerator: str) -> dict | None:
    """The recurrent implementation of a run, or None for a model without RNN layers."""
    layers = rnn_layers(model)
    if not layers:
        return None
    per_layer = []
    for layer in layers:
        conditions = cudnn_conditions(layer)
        per_layer.append(
            {
                "layer": layer.name,
                "class": type(layer).__name__,
                "units": int(layer.units),
                "cudnn_eligible": all(conditions.values()),
                "failed_conditions": sorted(k for k, ok in conditions.items() if not ok),
            }
        )
    eligible = all(x["cudnn_eligible"] for x in per_layer)
    # cudnn=false (use_cudnn): the generic loop was asked for, not fallen back to.
    off = all(getattr(layer, "use_cudnn", "auto") is False for layer in layers)
    if op_types is None:
        impl, reason = "unknown", "the training step was not traced in this process"
    elif op_types & CUDNN_OPS:
        impl, reason = "cudnn", "fused cuDNN kernel (a CudnnRNN op is in the traced step)"
    elif accelerator == "gpu" and off:
        impl = "keras-generic-loop"
        reason = (
            "cuDNN turned off (the model's cudnn=false): Keras's generic time loop on the "
            "GPU, as 2017's Keras ran an LSTM"
        )
    elif accelerator == "gpu":
        impl = "keras-generic-loop"
        reason = "a GPU is used but the traced step has no CudnnRNN op: " + (
            "a layer fails cuDNN's conditions (see failed_conditions)"
            if not eligible
            else "Keras fell back (e.g. a mask that is not right-padded)"
        )
    elif accelerator == "tpu":
        impl = "keras-generic-loop"
        reason = "TPU: Keras's generic time loop, compiled by XLA (cuDNN is GPU-only)"
    else:
        impl = "keras-generic-loop"
        reason = (
            "no GPU is visible: Keras's generic time loop (tf.while_loop, one fused "
            "4-gate matmul per step); cuDNN is GPU-only"
        )
    # What the run asked of its layers: "auto" (Keras picks) or "off" (cudnn=false).
    return {
        "implementation": impl,
        "reason": reason,
        "cudnn": "off" if off else "auto",
        "layers": per_layer,
    }


def unrolled_copy(model):
    """MODEL with every recurrent layer unrolled (same weights), for counting FLOPs.

    TensorFlow's graph profiler does not look inside while-loop bodies, so a
    rolled LSTM counts only its input and output layers.  Unrolled, every
    time step's matmuls are in the graph and are counted.  Models without
    recurrent layers come back unchanged.
    """
    import keras

    if not rnn_layers(model):
        return model

    def unroll(config):
        config = dict(config)
        for key in ("layer", "backward_layer"):
            if isinstance(config.get(key), dict):
                inner = dict(config[key])
                inner["config"] = dict(inner["config"], unroll=True)
                config[key] = inner
        if "unroll" in config:
            config["unroll"] = True
        return config

    def clone(layer):
        if isinstance(layer, (keras.layers.Bidirectional, keras.layers.RNN)):
            return type(layer).from_config(unroll(layer.get_config()))
        return layer

    return keras.models.clone_model(model, clone_function=clone)
