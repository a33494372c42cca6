"""A model's randomness: the dropout state a checkpoint must carry, and seeds handed out twice.

Each Keras dropout layer draws its masks from a seed generator, a
`[seed, counter]` variable that the layer keeps outside what
`tf.train.Checkpoint` reaches through the model.  Left out, a resumed run
starts its masks again from the first step's, and does not continue the run
it resumes.  `seed_states` lists those variables for the runner's
checkpoint.

Keras' initializers give the same values on every call when seeded with an
integer, or unseeded (the instance draws its seed once): keras.io,
"Layer weight initializers".  One instance, or one integer seed, given to
several layers makes their weights start as copies of each other (scaled
copies under `VarianceScaling`), and one integer seed given to several
dropout layers makes them drop the same units.  `repeats` finds both in a
freshly built model, so the run says so instead of training it silently.

Under a strategy, a seed generator's state is one mirrored variable (or one
variable on a parameter server), so every replica of Keras' own random
layers (Dropout, SpatialDropout, GaussianNoise, random augmentation) drew
the same numbers, and two parameter-server workers could too.  `draw` gives
each replica and each worker a stream of its own; `separate_streams` makes
every seed generator of a built model draw through it.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np

_PREFIX = 16  # values compared a weight: 16 equal random values are no coincidence


def _generators(model):
    """(layer, seed generator) for each seed generator in MODEL's layers (nested ones too),
    once each, in layer order."""
    seen = set()
    for layer in model._flatten_layers(include_self=True, recursive=True):
        for generator in getattr(layer, "_seed_generators", ()):
            if id(generator) not in seen:
                seen.add(id(generator))
                yield layer, generator


_STREAM = {"worker": None}


@contextlib.contextmanager
def worker_stream(worker):
    """Seeds drawn inside are parameter-server worker WORKER's own (an int32 tensor).

    The workers step apart on one seed state: `draw` then advances it with
    one add on the parameter server (Keras' read, then write of the value
    plus one, lets a worker that read before another wrote set the counter
    back), and folds WORKER into the seed, so two workers that read the same
    value draw different numbers.
    """
    before = _STREAM["worker"]
    _STREAM["worker"] = worker
    try:
        yield
    finally:
        _STREAM["worker"] = before


def draw(generator):
    """GENERATOR's next seed, int32 [2], of this replica's and this worker's own stream.

    On one replica and outside a parameter-server step, the seed Keras
    draws, cast as Keras casts it for stateless ops.
    """
    import tensorflow as tf

    worker = _STREAM["worker"]
    if worker is None:
        seed = type(generator).next(generator)  # Keras' own, not separate_streams' `next`
    else:
        state = generator.state.value
        step = tf.constant([0, 1], state.dtype)
        seed = state.assign_add(step) - step
    seed = tf.cast(tf.math.floormod(seed, tf.int32.max - 1), tf.int32)  # XLA takes int32
    replica = tf.distribute.get_replica_context()
    if replica is not None and replica.num_replicas_in_sync > 1:
        seed = tf.random.experimental.stateless_fold_in(seed, replica.replica_id_in_sync_group)
    if worker is not None:
        seed = tf.random.experimental.stateless_fold_in(seed, worker)
    return seed


def _next(generator, ordered=True):
    if not ordered:  # Keras' global generator's form, not a layer's
        return type(generator).next(generator, ordered=False)
    return draw(generator)


def separate_streams(model) -> int:
    """Makes each seed generator of MODEL's layers draw through `draw`; returns how many.

    For layers that call their generator's `next` (Keras' own); tpubench's
    `layers.Dropout` calls `draw` itself.
    """
    count = 0
    for _, generator in _generators(model):
        generator.next = functools.partial(_next, generator)
        count += 1
    return count


def seed_states(model) -> list:
    """The state variable of each seed generator in MODEL: what a checkpoint holds to
    continue the dropout masks where they stopped."""
    return [generator.state for _, generator in _generators(model)]


def _start(variable) -> np.ndarray | None:
    """VARIABLE's first values, divided by the first (a scaled copy gives the same), or
    None when they are not random (a constant, zeros and ones, too few values)."""
    import tensorflow as tf

    if "float" not in str(variable.dtype):  # seed states, step counters, token tables' ids
        return None
    try:
        values = tf.reshape(tf.convert_to_tensor(variable), [-1])[:_PREFIX].numpy()
    except (TypeError, ValueError, tf.errors.OpError):  # a variable this process cannot read
        return None
    values = values.astype(np.float64)
    if values.size < _PREFIX or np.unique(values).size < _PREFIX // 2 or values[0] == 0:
        return None
    return values / values[0]


def repeats(model) -> list[str]:
    """One line for each kind of repeated randomness in freshly built MODEL: weights that
    start as (scaled) copies of others, and dropout layers that share a seed."""
    lines = []
    paths, starts = [], []
    for variable in model.weights:
        start = _start(variable)
        if start is not None:
            paths.append(variable.path)
            starts.append(start)
    groups: dict[int, list[str]] = {}
    values = np.stack(starts) if starts else np.zeros((0, _PREFIX))
    for i, path in enumerate(paths):  # a row at a time: memory stays linear in the weights
        # float32 rounding leaves a scaled copy off by an ulp or so
        close = (np.abs(values[: i + 1] - values[i]) <= 1e-5 * (1 + np.abs(values[i]))).all(-1)
        groups.setdefault(int(np.argmax(close)), []).append(path)  # the first alike, or itself
    alike = [paths for paths in groups.values() if len(paths) > 1]
    if alike:
        count = sum(len(paths) - 1 for paths in alike)
        shown = alike[0][:3]
        more = ", ..." if sum(map(len, alike)) > len(shown) else ""
        what = "1 weight starts as a copy of another"
        if count > 1:
            what = f"{count} weights start as copies of others"
        lines.append(
            f"{what} ({' = '.join(shown)}{more}): an initializer seeded with an integer, or one "
            "instance given to several layers, gives the same values on every call; give each "
            "layer its own initializer, without a seed (--seed seeds them all)"
        )
    seeds: dict[int, list[str]] = {}
    for layer, generator in _generators(model):
        seeds.setdefault(int(generator.state.numpy()[0]), []).append(layer.name)
    shared = [names for names in seeds.values() if len(names) > 1]
    if shared:
        example = ", ".join(shared[0][:3])
        lines.append(
            f"dropout layers {example}{', ...' if len(shared[0]) > 3 else ''} "
            "share one seed and drop the same units each step; give them no seed "
            "(--seed seeds them all)"
        )
    return lines
