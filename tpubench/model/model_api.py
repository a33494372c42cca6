"""The write-once model contract: Estimator's shape on tf.distribute.

TPUEstimator asked a model for `input_fn(params)` and
`model_fn(features, labels, mode, params)` with `params["batch_size"]` the
per-shard batch.  tpubench keeps that shape in TF2 form, with the batch
named for what it is: `params["per_replica_batch_size"]` (what one replica's
batches hold) beside `params["global_batch_size"]` (one step over every
replica, what `--batch_size` gives).  `params["batch_size"]` still reads
the per-replica batch for one release, with one deprecation line.  A model module
builds a `ModelSpec` and registers it by name (`tpubench.model.registry`):

* `input_fn(params, input_context, mode)` returns a `tf.data.Dataset` of
  *per-replica* batches and shards itself by `input_context`;
* `build_model(params)` returns the network (Keras 3 layers are fine) and
  `build_optimizer(params)` its optimizer; both are called inside
  `strategy.scope()` by the runner, never by the model;
* `model_fn(model, features, labels, mode, params)` is the step logic: it
  returns *per-example* losses, predictions and per-example metric values;
  the runner scales, reduces and differentiates;
* `element_spec(params)` describes one example (features, labels) so
  synthetic data needs no files;
* `examples_per_epoch` gives the canonical dataset sizes;
* `target_metric` names the headline eval metric (accuracy, perplexity,
  masked-token accuracy) and `target_mode` whether higher ("max") or lower
  ("min") is better; `derived_metrics` computes metrics that are not means
  of per-example values (perplexity = exp(mean token loss)) from the eval
  means.

Model code never names a device, a strategy, a file system or a flag.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import sys
from collections.abc import Callable, Mapping
from typing import Any


class Mode(str, enum.Enum):
    """What a step does, as in tf.estimator.ModeKeys."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "predict"


@dataclasses.dataclass(frozen=True)
class StepOutput:
    """What `model_fn` returns for one per-replica batch.

    Attributes:
      per_example_loss: float32 tensor [batch]; None in PREDICT.  The runner
        divides its sum by the *global* batch, so every strategy computes
        the same loss for the same global batch.
      predictions: a tensor or dict of tensors (PREDICT, and for users).
      metrics: name -> float32 tensor [batch] of per-example values; the
        runner reports their mean over every evaluated example (accuracy is
        the mean of 0/1 correctness).
      aux_loss: optional scalar added once per replica step (already
        normalised, e.g. weight decay).
    """

    per_example_loss: Any = None
    predictions: Any = None
    metrics: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    aux_loss: Any = None


# The keys the runner adds to a model's params: they describe the run, not the
# network (reports compare them on their own, or not at all; FLOPs ignore them).
# `batch_size` is the deprecated spelling of `per_replica_batch_size`, kept in
# params for one release; a record's `model.params` holds none of the three
# batch keys (the record gives the batch at its top level).
# Each with what sets it, which `--params` names instead (registry.resolve_params).
RUNTIME_PARAMS = {
    "per_replica_batch_size": "--per_replica_batch_size sets it; use --per_replica_batch_size={}",
    "global_batch_size": "--batch_size sets it; use --batch_size={}",
    "batch_size": "--per_replica_batch_size sets it; use --per_replica_batch_size={}",
    "seed": "--seed seeds the run (its weights, dropout and input order); use --seed={}",
    "data_dir": "--data_dir sets it; use --data_dir={}",
    "deterministic": "--deterministic_input sets it",
    "cache": "--cache_input sets it",
    "fixed_eval_steps": "the run sets it for its evaluation",
    # --skip_corrupt's per-file counts: the data, not the network
    "readable_records": "--skip_corrupt sets it",
}
_DEPRECATED = {"batch_size": "per_replica_batch_size"}
_warned: set[str] = set()


class RunParams(dict):
    """A model's params for one run: a dict whose deprecated keys say so once.

    Reading `batch_size` ([] or get) prints one line to stderr, once per
    process, naming `per_replica_batch_size` and `global_batch_size`.
    """

    def __getitem__(self, key):
        _deprecated(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        _deprecated(key)
        return super().get(key, default)


def _deprecated(key) -> None:
    if key in _DEPRECATED and key not in _warned:
        _warned.add(key)
        print(
            f'tpubench: params["{key}"] is deprecated and goes in the next release: read '
            f'params["{_DEPRECATED[key]}"] (the same number: one replica\'s batch) or '
            'params["global_batch_size"] (all replicas together, what --batch_size gives)',
            file=sys.stderr,
            flush=True,
        )


def run_params(params: Mapping[str, Any], global_batch_size: int, replicas: int) -> RunParams:
    """PARAMS with the batch of one run: global, per replica, and the deprecated alias."""
    per_replica = global_batch_size // replicas
    # batch_size first: a record's model.params keeps its old key order.
    return RunParams(
        params,
        batch_size=per_replica,
        global_batch_size=global_batch_size,
        per_replica_batch_size=per_replica,
    )


Params = Mapping[str, Any]
InputFn = Callable[[Params, Any, Mode], Any]
ModelFn = Callable[[Any, Any, Any, Mode, Params], StepOutput]


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """Everything the runner needs to know about one model.

    Attributes:
      name: registry name, e.g. "resnet50".
      description: one line for `tpubench models`.
      build_model: params -> keras.Model (called under strategy.scope()).
      build_optimizer: params -> keras optimizer (under strategy.scope()).
      model_fn: (model, features, labels, mode, params) -> StepOutput.
      input_fn: (params, input_context, mode) -> per-replica batched Dataset.
      element_spec: params -> (features TensorSpec(s), labels TensorSpec)
        of ONE example (no batch dimension).
      examples_per_epoch: canonical {"train": n, "eval": n} for the dataset
        the model is defined on (used for synthetic runs and $/epoch).
      datasets: dataset names whose prepared records fit this model; the
        first is canonical.  `digits` (embedded) is what runs offline.
      default_params: hyperparameters; `--params k=v` overrides them.
      tiny_params: overrides that make a tiny variant for tests.
      target_metric: the headline eval metric; `--target_accuracy` watches it.
      target_mode: "max" (reached at or above the target) or "min" (at or
        below: perplexity).
      default_batch_size: global batch when `--batch_size` is not given.
      derived_metrics: eval means (dict) -> extra metrics computed from them,
        e.g. `perplexity_from("token_loss")`; None for none.
      split_examples: (manifest, split, params) -> examples the model draws
        from a prepared split (windows of a token stream); None means the
        manifest's record count.
      channels_first: the network can be built channels-first (NCHW): its
        input is `layers.image_input`, it takes channel axes from
        `layers.channel_axis()` and leaves formats to Keras's default, so
        `--data_format` may choose the layout it runs in (the runner then
        hands it NCHW images; the weights and checkpoints are the same
        either way).  False: always channels-last.
    """

    name: str
    description: str
    build_model: Callable[[Params], Any]
    build_optimizer: Callable[[Params], Any]
    model_fn: ModelFn
    input_fn: InputFn
    element_spec: Callable[[Params], tuple[Any, Any]]
    examples_per_epoch: Mapping[str, int]
    datasets: tuple[str, ...] = ()
    default_params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    tiny_params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    target_metric: str = "accuracy"
    default_batch_size: int = 32
    target_mode: str = "max"
    derived_metrics: Callable[[Mapping[str, float]], dict] | None = None
    split_examples: Callable[[Any, str, Params], int] | None = None
    channels_first: bool = False


def examples_in(spec: ModelSpec, manifest, split: str, params: Params) -> int:
    """Examples SPEC's model draws from SPLIT of a prepared dataset."""
    if spec.split_examples is not None:
        return int(spec.split_examples(manifest, split, params))
    return manifest.split(split).examples


def reached(spec: ModelSpec, value: float, target: float) -> bool:
    """Whether an eval VALUE of the headline metric meets TARGET."""
    return value <= target if spec.target_mode == "min" else value >= target


def perplexity_from(metric: str = "loss") -> Callable[[Mapping[str, float]], dict]:
    """derived_metrics for language models: perplexity = exp(mean per-token loss METRIC)."""

    def derive(means: Mapping[str, float]) -> dict:
        loss = means.get(metric)
        if loss is None:
            return {}
        return {"perplexity": math.exp(loss) if loss < 700 else math.inf}

    return derive


def classification_model_fn(model, features, labels, mode: Mode, params: Params) -> StepOutput:
    """The step logic shared by the image and text classifiers.

    Sparse softmax cross-entropy on logits computed in float32 (so bf16/fp16
    models keep a stable loss), argmax predictions and 0/1 accuracy.  A
    model with ONE output logit is a binary classifier (Keras's sigmoid
    head): sigmoid cross-entropy, class 1 when the logit is positive.
    """
    import tensorflow as tf

    training = mode == Mode.TRAIN
    logits = tf.cast(model(features, training=training), tf.float32)
    binary = logits.shape[-1] == 1
    if binary:
        predictions = tf.cast(logits[:, 0] > 0, tf.int32)
    else:
        predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
    if mode == Mode.PREDICT:
        return StepOutput(predictions={"classes": predictions, "logits": logits})
    labels = tf.cast(tf.reshape(labels, [-1]), tf.int32)
    if binary:
        per_example = tf.nn.sigmoid_cross_entropy_with_logits(
            labels=tf.cast(labels, tf.float32), logits=logits[:, 0]
        )
    else:
        per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    correct = tf.cast(tf.equal(predictions, labels), tf.float32)
    aux = None
    losses = model.losses  # Keras 3 builds the regularisation ops on every access
    if losses:
        aux = tf.add_n([tf.cast(x, tf.float32) for x in losses])
    return StepOutput(
        per_example_loss=per_example,
        predictions=predictions,
        metrics={"accuracy": correct},
        aux_loss=aux,
    )
