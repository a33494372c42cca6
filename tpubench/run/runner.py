"""The inner loop: `steps_per_loop` steps inside one tf.function per host call.

The model gives per-replica step logic (`model_fn`); this module wraps it in
`strategy.run` inside a `tf.range` loop (TPUEstimator's iterations_per_loop)
so host overhead is paid once per loop, not once per step.  It never times,
writes or checkpoints: that is the controller's job.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from tpubench.core.precision import Precision
from tpubench.data import pipeline, synthetic
from tpubench.model import (
    layers,
    model_api,
    optim,
    optimizer_choice,
    own_kernels,
    randomness,
    weight_copy,
)
from tpubench.model.model_api import Mode
from tpubench.run import central_step, clipping, evaluation, restoring


class Runner:
    """Builds the model under the strategy and runs train/eval loops.

    Args:
      spec: the model's ModelSpec.
      params: resolved hyperparameters plus runner keys (batch_size is the
        per-replica batch, global_batch_size, seed, data_dir, ...).
      strategy: a tf.distribute.Strategy.
      precision: fp32 | bf16 | fp16 (Keras mixed-precision policy; fp16 adds
        dynamic loss scaling).
      xla: compile with XLA (jit_compile=True): on one device the whole
        train step, the optimizer's update included; across replicas each
        replica's forward and backward pass (`xla_scope` says which).
      step_batch: examples one synchronous step divides its loss by: the
        global batch (default), or one worker's batch under
        ParameterServerStrategy, where workers step independently.
      train: build the optimizer too; False for inference (no optimizer slots).
      data_format: the image layout the network is built in (run/layout.py);
        channels_first only for models that declare they can take it.
      pointwise_matmul, own_batch_norm: 1x1 weight gradients as one matrix product;
        tpubench's CPU kernels (model/own_kernels.py says which; conv_grads.py).
      optimizer: "model" (the model's own) or a vocab.OPTIMIZERS name that
        replaces it at the model's learning rate (model/optimizer_choice.py).
    """

    def __init__(
        self,
        spec: model_api.ModelSpec,
        params,
        strategy,
        precision: Precision = Precision.FP32,
        xla=False,
        step_batch: int | None = None,
        train: bool = True,
        data_format: str = "channels_last",
        optimizer: str = "model",
        pointwise_matmul: bool = False,
        own_batch_norm: bool = False,
    ):
        self.spec = spec
        self.params = model_api.RunParams(params)
        self.strategy = strategy
        self.precision = precision
        self.data_format = data_format
        self.global_batch_size = int(params["global_batch_size"])
        self.step_batch = int(step_batch or self.global_batch_size)
        keras.mixed_precision.set_global_policy(self.precision.policy)
        keras.utils.set_random_seed(int(params["seed"]))
        with strategy.scope():
            with layers.building(data_format, pointwise_matmul, own_batch_norm):
                self.model = spec.build_model(self.params)
            randomness.separate_streams(self.model)  # Keras' random layers: a stream a replica
            self.optimizer, self.bf16_copies = None, None
            if train:
                with own_kernels.use(own_batch_norm):
                    own = spec.build_optimizer(self.params)
                    optimizer = optimizer_choice.choose(optimizer, own)
                if self.precision.loss_scaling:
                    optimizer = optim.LossScaleOptimizer(optimizer)
                self.optimizer = optimizer
                # Keras 3: built in the scope before a custom loop runs it (TF 2.20-2.21).
                self.optimizer.build(self.model.trainable_variables)
                self.bf16_copies = weight_copy.attach(self.model, self.optimizer, strategy)
            self.global_step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
        keras.mixed_precision.set_global_policy("float32")
        # --xla: the input iterator stays outside XLA (IteratorGetNext has no
        # XLA kernel on CPU/GPU; TPUStrategy compiles the whole loop anyway).
        # On one device the step is one XLA cluster, the optimizer's update
        # (and fp16's loss-scale check) fused in as tf_cnn_benchmarks'
        # --xla_compile does; across replicas the update's cross-replica
        # merge_call has no XLA kernel, so each replica's forward and backward
        # pass is compiled and the reduction and update run outside.
        self.xla_scope = None
        self._grads_fn = self._loss_and_grads
        if xla and train and isinstance(strategy, tf.distribute.OneDeviceStrategy):
            self.xla_scope = "step"
            self._train_step = tf.function(self._train_step, jit_compile=True)
        elif xla:
            self.xla_scope = "forward_backward"
            self._grads_fn = tf.function(self._loss_and_grads, jit_compile=True)
        self._predict_fn = tf.function(self._predict, jit_compile=True) if xla else self._predict
        self._eval_step = None

    def _model_fn(self, features, labels, mode):
        """The model's step logic; images arrive NHWC and go NCHW to a channels-first net."""
        if self.data_format == "channels_first":
            features = tf.transpose(features, (0, 3, 1, 2))
        return self.spec.model_fn(self.model, features, labels, mode, self.params)

    # ----------------------------------------------------------------- train
    def _loss_and_grads(self, features, labels):
        with tf.GradientTape() as tape:
            out = self._model_fn(features, labels, Mode.TRAIN)
            loss = tf.reduce_sum(out.per_example_loss) / self.step_batch
            if out.aux_loss is not None:
                loss += out.aux_loss / self.strategy.num_replicas_in_sync
            scaled = self.optimizer.scale_loss(loss) if self.precision.loss_scaling else loss
        return loss, tape.gradient(scaled, self.model.trainable_variables)

    def _train_step(self, features, labels):
        loss, grads = self._grads_fn(features, labels)
        grads = clipping.clip_reduced(grads, self.strategy, self.optimizer)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables, strict=True))
        return loss

    def make_train_loop(self, next_batch):
        """Returns f(num_steps) -> (last_loss, mean_loss) running num_steps steps.

        NEXT_BATCH is a zero-argument callable giving a per-replica
        (features, labels): `next(iterator)` for real data, or the same
        device-resident synthetic values every step.
        """
        strategy = self.strategy
        step = central_step.make(strategy, self._grads_fn, self.optimizer, self.model)
        step = step or (lambda features, labels: strategy.run(self._train_step, (features, labels)))

        def loop(num_steps):
            total = tf.constant(0.0)
            last = tf.constant(0.0)
            with self.bf16_copies.kept():  # model/weight_copy.py
                for _ in tf.range(num_steps):
                    features, labels = next_batch()
                    per_replica = step(features, labels)
                    last = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
                    total += last
            self.global_step.assign_add(tf.cast(num_steps, tf.int64))
            return last, total / tf.cast(num_steps, tf.float32)

        self.train_loop = tf.function(loop, reduce_retracing=True)
        return self.train_loop

    def traced_op_types(self) -> set[str] | None:
        """Op types of the traced train loop (nested functions included), or None."""
        loop = getattr(self, "train_loop", None)
        if loop is None:
            return None
        graph = loop.get_concrete_function(tf.TensorSpec([], tf.int32)).graph.as_graph_def()
        ops = {n.op for n in graph.node}
        for fn in graph.library.function:
            ops.update(n.op for n in fn.node_def)
        return ops

    def make_ps_loop(self):
        """Parameter-server form: f(per_worker_iterator, num_steps) -> (last, mean).

        Scheduled on whichever worker is free, it reads that worker's own
        iterator (ps_data), whose elements carry the worker's index.
        """
        strategy = self.strategy

        def loop(iterator, num_steps):
            total = tf.constant(0.0)
            last = tf.constant(0.0)
            for _ in tf.range(num_steps):
                features, labels, worker = next(iterator)
                with randomness.worker_stream(worker):  # each worker draws masks of its own
                    per_replica = strategy.run(self._train_step, args=(features, labels))
                last = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
                total += last
            return last, total / tf.cast(num_steps, tf.float32)

        return tf.function(loop)

    def evaluate_inline(self, max_steps: int | None = None) -> dict:
        """Parameter-server eval on the coordinator, reading remote variables."""
        if self._eval_step is None:
            self._eval_step = tf.function(self._eval_replica, reduce_retracing=True)
        dataset = self.spec.input_fn(model_api.RunParams(self.params), None, Mode.EVAL)
        return self._accumulate(dataset, max_steps)

    def set_global_batch_size(self, global_batch_size: int) -> None:
        """Makes later datasets, synthetic inputs and traced steps use GLOBAL_BATCH.

        For inference sweeps, which measure one built model at several batch
        sizes; the per-replica `params["per_replica_batch_size"]` follows.
        """
        replicas = self.strategy.num_replicas_in_sync
        self.global_batch_size = self.step_batch = int(global_batch_size)
        self.params = model_api.run_params(self.params, self.global_batch_size, replicas)

    def synthetic_inputs(self, seed: int):
        """Per-replica synthetic (features, labels), made once, kept on device."""
        batch = synthetic.global_batch(
            self.spec.element_spec(self.params), self.params, self.global_batch_size, seed
        )
        return synthetic.per_replica_values(self.strategy, batch)

    def distribute(self, mode: Mode, **param_overrides):
        """The model's input_fn, distributed per replica by the strategy.

        PARAM_OVERRIDES change runner keys for this dataset only, e.g.
        `fixed_eval_steps=True` for an endless stream of full eval batches.
        """
        params = dict(self.params, **param_overrides)

        def dataset_fn(ctx):
            seed = pipeline.pipeline_seed(params["seed"], ctx.input_pipeline_id)
            return self.spec.input_fn(model_api.RunParams(params, seed=seed), ctx, mode)

        options = tf.distribute.InputOptions(experimental_fetch_to_device=True)
        return self.strategy.distribute_datasets_from_function(dataset_fn, options)

    # --------------------------------------------------------------- predict
    def _predict(self, features):
        return self._model_fn(features, None, Mode.PREDICT).predictions

    def make_predict_step(self, next_batch):
        """Returns f() -> predictions for one global batch, gathered on the host.

        Each replica runs the model's forward pass (PREDICT mode) on its
        share of NEXT_BATCH() (per-replica (features, labels); labels are
        ignored); the per-replica outputs are concatenated in replica order,
        so 1 and N replicas return the same global batch of predictions.
        """

        def step():
            features, _ = next_batch()
            return self._gathered_predictions(features)

        return tf.function(step)

    def make_predict_fn(self):
        """Returns f(features) -> predictions for one global batch of per-replica FEATURES.

        For callers that bring their own batches (LoadGen's SUT): each new
        batch shape traces once.
        """
        return tf.function(self._gathered_predictions)

    def _gathered_predictions(self, features):
        strategy = self.strategy
        per_replica = strategy.run(self._predict_fn, args=(features,))
        # Gather leaf by leaf: Strategy.gather on a dict of PerReplica
        # values returns only the first replica's part (TF 2.21).
        return tf.nest.map_structure(lambda v: strategy.gather(v, axis=0), per_replica)

    # ------------------------------------------------------------------ eval
    def _eval_replica(self, features, labels):
        self._metric_names, sums = evaluation.replica_sums(
            self._model_fn(features, labels, Mode.EVAL)
        )
        return sums

    def evaluate(self, dataset, max_steps: int | None = None) -> dict:
        """Mean of every per-example metric (and loss) over the eval data."""
        if self._eval_step is None:
            strategy = self.strategy

            def step(features, labels):
                per_replica = strategy.run(self._eval_replica, args=(features, labels))
                return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

            self._eval_step = tf.function(step, reduce_retracing=True)
        return self._accumulate(dataset, max_steps)

    def _accumulate(self, dataset, max_steps):
        totals = evaluation.summed(self._eval_step, dataset, max_steps)
        return evaluation.means(totals, self._metric_names, self.spec.derived_metrics)

    def checkpoint(self, dropout_state: bool = True):
        """What a checkpoint holds (run/restoring.py's `parts`)."""
        return tf.train.Checkpoint(**restoring.parts(self, dropout_state))
