"""Each input pipeline (a host, or a parameter-server worker) shuffles and augments
with a seed of its own, and reads the shard its input context names."""

from types import SimpleNamespace

import tensorflow as tf

from tpubench.data import pipeline
from tpubench.model.model_api import Mode
from tpubench.run import ps_data, runner


def _spec(seen):
    def input_fn(params, ctx, mode):
        seen.append((ctx.num_input_pipelines, ctx.input_pipeline_id, params["seed"]))
        return tf.data.Dataset.from_tensors((tf.zeros([2]), tf.constant(3)))

    return SimpleNamespace(input_fn=input_fn)


def test_each_host_of_a_synchronous_run_gets_a_seed_of_its_own():
    seen = []

    class TwoHosts:
        def distribute_datasets_from_function(self, dataset_fn, options):
            return [dataset_fn(tf.distribute.InputContext(2, i, 4)) for i in range(2)]

    fake = SimpleNamespace(params={"seed": 42}, spec=_spec(seen), strategy=TwoHosts())
    runner.Runner.distribute(fake, Mode.TRAIN)
    assert seen == [(2, 0, 42), (2, 1, 42 + 1_000_003)]  # host 0: the run's own seed


def test_each_parameter_server_worker_reads_its_shard_with_its_seed_and_knows_its_index():
    seen = []
    make = ps_data.datasets(_spec(seen), {"seed": 7}, Mode.TRAIN, synthetic_seed=None)
    elements = [next(iter(make(worker, 3))) for worker in range(3)]
    assert seen == [(3, 0, 7), (3, 1, 7 + 1_000_003), (3, 2, 7 + 2_000_006)]
    assert [int(worker) for _, _, worker in elements] == [0, 1, 2]
    assert [int(label) for _, label, _ in elements] == [3, 3, 3]


def test_an_unseeded_run_stays_unseeded():
    assert pipeline.pipeline_seed(None, 3) is None
    assert pipeline.pipeline_seed(5, 0) == 5
