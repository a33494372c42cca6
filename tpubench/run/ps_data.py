"""Parameter-server input: a stream of its own for each worker, which knows its index.

`ClusterCoordinator.create_per_worker_dataset` runs one dataset function,
traced once, on every worker, and ParameterServerStrategy gives every
worker the same input context (pipeline 0 of 1).  A seeded pipeline then
reads the same examples in the same order on every worker: with
`--deterministic_input`, two workers stepped on exactly the same batches.
TensorFlow's own advice is to shuffle without a seed, which a seeded run
cannot take.

Here each worker gets a dataset function of its own, traced with its
index: the model's `input_fn` receives an `InputContext` of N pipelines
(so it shards its files or records as under the synchronous strategies),
the run's seed moves by the index (shuffles and augmentation draw their own
numbers), and each element carries the index, which the step hands to
the random layers (`randomness.worker_stream`) so that workers draw masks
of their own.  Building the per-worker iterators needs two of the
coordinator's internals (its workers and their `create_resource`), checked
here against TensorFlow 2.20 and 2.21, the versions tpubench installs.
"""

from __future__ import annotations

from collections.abc import Callable

import tensorflow as tf

from tpubench.data import pipeline, synthetic
from tpubench.model import model_api


def input_context(worker: int, workers: int) -> tf.distribute.InputContext:
    """Pipeline WORKER of WORKERS, one replica each (a parameter-server worker steps alone)."""
    return tf.distribute.InputContext(
        num_input_pipelines=workers, input_pipeline_id=worker, num_replicas_in_sync=1
    )


def tagged(dataset: tf.data.Dataset, worker: int) -> tf.data.Dataset:
    """DATASET's (features, labels) elements as (features, labels, WORKER)."""
    index = tf.constant(worker, tf.int32)
    return dataset.map(lambda features, labels: (features, labels, index))


def datasets(spec, run_params: dict, mode, synthetic_seed: int | None):
    """make(worker, workers): worker WORKER's dataset of SPEC's model, tagged with the index.

    Synthetic data (SYNTHETIC_SEED given) is one fixed batch on every worker.
    """
    if synthetic_seed is not None:
        params = model_api.RunParams(run_params)
        element_spec = spec.element_spec(params)
        size = params["per_replica_batch_size"]
        batch = synthetic.global_batch(element_spec, params, size, synthetic_seed)

        def make(worker, workers):
            return tagged(tf.data.Dataset.from_tensors(batch).repeat(), worker)
    else:

        def make(worker, workers):
            params = dict(run_params, seed=pipeline.pipeline_seed(run_params["seed"], worker))
            context = input_context(worker, workers)
            return tagged(spec.input_fn(model_api.RunParams(params), context, mode), worker)

    return make


def per_worker_iterator(coordinator, make_dataset: Callable[[int, int], tf.data.Dataset]):
    """One iterator on each worker over MAKE_DATASET(i, n), as a value `schedule` resolves.

    Passed to `coordinator.schedule`, each worker's closure gets its own
    iterator, like the one `create_per_worker_dataset` returns.  If a worker
    restarts, the coordinator builds its iterator again from the same function.
    """
    from tensorflow.python.distribute import input_lib
    from tensorflow.python.distribute.coordinator import values as coordinator_values

    workers = list(coordinator._cluster.workers)
    remote = []
    for worker in workers:
        index = worker.worker_index
        dataset_fn = tf.function(lambda i=index: make_dataset(i, len(workers)))
        concrete = dataset_fn.get_concrete_function()

        def make_iterator(concrete=concrete):
            return iter(concrete())

        value = worker.create_resource(make_iterator)
        value._type_spec = input_lib.get_iterator_spec_from_dataset(
            coordinator.strategy, concrete.structured_outputs
        )
        remote.append(value)
    return coordinator_values.PerWorkerDistributedIterator(tuple(remote))
