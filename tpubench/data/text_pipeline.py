"""Input functions over prepared text (the layouts of `tpubench.data.text`).

The reading half matches `pipeline.image_classification_input_fn` (shard
per worker by file when every input pipeline gets one, else by record;
interleave; AUTOTUNE), then:

* sequence classification: batch first, parse the batch in one call, and
  pad or truncate every text to the model's length at the front (Keras's
  `pad_sequences` default: the end of a long text is kept);
* token streams: each chunk is cut into windows with `tf.signal.frame`,
  windows are shuffled and batched, and the model turns a batch of windows
  into (features, labels).
"""

from __future__ import annotations

from collections.abc import Callable

from tpubench.data import manifest as manifest_lib
from tpubench.data import text, throttle
from tpubench.model.model_api import Mode


def _records(params, input_context, mode: Mode, fmt: str, model: str):
    """(record dataset sharded for this input pipeline, manifest, split, flags)."""
    import tensorflow as tf

    manifest = manifest_lib.read(params["data_dir"])
    text.require_format(manifest, fmt, model)
    split = "train" if mode == Mode.TRAIN else manifest.eval_split()
    files = manifest_lib.shard_paths(params["data_dir"], manifest.split(split).files)
    training = mode == Mode.TRAIN
    pipelines = input_context.num_input_pipelines if input_context else 1
    index = input_context.input_pipeline_id if input_context else 0
    deterministic = bool(params.get("deterministic", False)) or not training
    ds = tf.data.Dataset.from_tensor_slices(files)
    by_file = len(files) >= pipelines > 1
    if by_file:
        ds = ds.shard(pipelines, index)
    if training:
        ds = ds.shuffle(len(files), seed=params.get("seed"), reshuffle_each_iteration=True)
    ds = ds.interleave(
        tf.data.TFRecordDataset,
        cycle_length=min(len(files), 8),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=deterministic,
    )
    ds = throttle.records(ds, params.get("read_mb_per_s"), deterministic)
    late_shard = (pipelines, index) if pipelines > 1 and not by_file else None
    return ds, manifest, split, training, deterministic, late_shard


def _finish(ds, params, training, examples):
    if params.get("cache"):
        ds = ds.cache()
    if training:
        ds = ds.shuffle(min(10_000, max(1, examples)), seed=params.get("seed"))
    fixed_eval = bool(params.get("fixed_eval_steps", False))
    if training or fixed_eval:
        ds = ds.repeat()
    return ds.batch(params["per_replica_batch_size"], drop_remainder=training or fixed_eval)


def _with_options(ds, deterministic):
    import tensorflow as tf

    options = tf.data.Options()
    options.deterministic = deterministic
    return ds.with_options(options).prefetch(tf.data.AUTOTUNE)


def pad_front(ragged, length: int):
    """Ragged int ids [B, None] -> dense [B, LENGTH]: the last LENGTH ids, zeros in front."""
    import tensorflow as tf

    kept = ragged[:, -length:]
    lengths = tf.cast(kept.row_lengths(), tf.int32)
    dense = kept.to_tensor(default_value=0, shape=[None, length])  # ids at the start
    shift = length - lengths  # move them to the end: out[b, j] = dense[b, j - shift_b]
    cols = tf.range(length)[None, :] - shift[:, None]
    out = tf.gather(dense, tf.maximum(cols, 0), batch_dims=1)
    return tf.where(cols >= 0, out, tf.zeros_like(out))


def sequence_classification_input_fn(model: str, length_key: str = "max_length") -> Callable:
    """An input_fn over token_sequences: (int32 ids [B, params[LENGTH_KEY]], int32 labels [B])."""

    def input_fn(params, input_context, mode: Mode):
        import tensorflow as tf

        ds, manifest, split, training, deterministic, late = _records(
            params, input_context, mode, text.SEQUENCES, model
        )
        if late:
            ds = ds.shard(*late)
        ds = _finish(ds, params, training, manifest.split(split).examples)
        length = int(params[length_key])

        def parse(serialized):
            parsed = tf.io.parse_example(
                serialized,
                {
                    "tokens": tf.io.RaggedFeature(tf.int64),
                    "label": tf.io.FixedLenFeature([], tf.int64),
                },
            )
            ids = pad_front(tf.cast(parsed["tokens"], tf.int32), length)
            return ids, tf.cast(parsed["label"], tf.int32)

        ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=deterministic)
        return _with_options(ds, deterministic)

    return input_fn


def stream_input_fn(model: str, window: Callable, to_example: Callable) -> Callable:
    """An input_fn over token_stream records.

    WINDOW(params) -> (length, stride) of the token windows;
    TO_EXAMPLE(windows int32 [B, length], params) -> (features, labels).
    """

    def input_fn(params, input_context, mode: Mode):
        import tensorflow as tf

        ds, manifest, split, training, deterministic, late = _records(
            params, input_context, mode, text.STREAM, model
        )
        length, stride = window(params)

        def frames(serialized):
            ids = tf.io.parse_single_example(serialized, {"tokens": tf.io.RaggedFeature(tf.int64)})[
                "tokens"
            ]
            return tf.data.Dataset.from_tensor_slices(
                tf.signal.frame(tf.cast(ids, tf.int32), length, stride)
            )

        ds = ds.flat_map(frames)
        if late:  # few chunks: share windows, not records, between pipelines
            ds = ds.shard(*late)
        examples = text.stream_windows(manifest, split, length, stride)
        ds = _finish(ds, params, training, examples)
        ds = ds.map(
            lambda w: to_example(w, params),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=deterministic,
        )
        return _with_options(ds, deterministic)

    return input_fn


def stream_examples(window: Callable) -> Callable:
    """A ModelSpec.split_examples hook: windows per stream split for this model."""

    def count(manifest, split: str, params) -> int:
        if manifest.format != text.STREAM:
            return manifest.split(split).examples
        length, stride = window(params)
        return text.stream_windows(manifest, split, length, stride)

    return count
