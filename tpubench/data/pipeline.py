"""Input-pipeline builders that models use as their `input_fn`.

A model says how to preprocess one example; these helpers do the rest the
same way for local disk and gs://: list the split's shards from the
manifest, shard per worker by `InputContext` (by file when every worker gets
at least one file, else by example), interleave reads, parallel map,
per-replica batch, prefetch, all with AUTOTUNE.

Params the runner supplies (a model never sets them): `batch_size`
(per-replica), `data_dir`, `seed`, `deterministic`, `cache`,
`read_mb_per_s` (an emulated disk's read rate: throttle.py),
`fixed_eval_steps` (multi-worker and TPU: eval repeats with full batches so
every worker runs the same number of eval steps) and `readable_records`
({file: records to read} for shards found damaged under --skip_corrupt).

Raw-image records are batched first and parsed in one vectorised call per
batch; JPEG records are decoded one by one (decode-and-crop, the standard
ResNet or Inception preprocessing at the model's `image_size`) in a
parallel map, then batched.
"""

from __future__ import annotations

from collections.abc import Callable

from tpubench.core import errors
from tpubench.data import image_preprocessing, tfrecord, throttle
from tpubench.data import manifest as manifest_lib
from tpubench.model.model_api import Mode

# Pipeline i's seed is the run's seed plus i times this (a prime, far from small seeds).
SEED_STRIDE = 1_000_003


def pipeline_seed(seed: int | None, pipeline: int) -> int | None:
    """The seed input pipeline PIPELINE shuffles and augments with: the run's for pipeline 0.

    One pipeline a parameter-server worker, and one a host under the
    synchronous strategies (the runner's datasets), so that hosts reading
    shards of their own do not also draw the same crops and flips.
    """
    if seed is None:
        return None
    return int(seed) + pipeline * SEED_STRIDE


def image_classification_input_fn(preprocess: Callable, jpeg_style: str = "resnet") -> Callable:
    """An input_fn over raw-image or JPEG records (the manifest's `format`).

    `preprocess(images, labels, mode, params)` receives a whole per-replica
    batch (uint8 images [B, H, W, C], int32 labels [B]) and returns the
    model's (features, labels).  JPEG records are decoded to the model's
    `image_size` param with JPEG_STYLE preprocessing (see image_preprocessing).
    """

    def input_fn(params, input_context, mode: Mode):
        import tensorflow as tf

        manifest = manifest_lib.read(params["data_dir"])
        split = "train" if mode == Mode.TRAIN else manifest.eval_split()
        files = manifest_lib.shard_paths(params["data_dir"], manifest.split(split).files)
        training = mode == Mode.TRAIN
        num_pipelines = input_context.num_input_pipelines if input_context else 1
        index = input_context.input_pipeline_id if input_context else 0
        deterministic = bool(params.get("deterministic", False)) or not training

        limits = params.get("readable_records") or {}
        take = [int(limits.get(f, -1)) for f in files]
        ds = tf.data.Dataset.from_tensor_slices((files, tf.constant(take, tf.int64)))
        by_file = len(files) >= num_pipelines and num_pipelines > 1
        if by_file:
            ds = ds.shard(num_pipelines, index)
        if training:
            ds = ds.shuffle(len(files), seed=params.get("seed"), reshuffle_each_iteration=True)
        ds = ds.interleave(
            lambda f, n: tf.data.TFRecordDataset(f).take(n),
            cycle_length=min(len(files), 8),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=deterministic,
        )
        ds = throttle.records(ds, params.get("read_mb_per_s"), deterministic)
        if num_pipelines > 1 and not by_file:
            ds = ds.shard(num_pipelines, index)
        if params.get("cache"):
            ds = ds.cache()
        if training:
            ds = ds.shuffle(min(10_000, manifest.split(split).examples), seed=params.get("seed"))
        fixed_eval = bool(params.get("fixed_eval_steps", False))
        if training or fixed_eval:
            ds = ds.repeat()
        drop = training or fixed_eval
        if manifest.format == "jpeg_image":
            size = params.get("image_size")
            if not size:
                raise errors.UsageError(
                    f"{params['data_dir']} holds JPEG records; the model needs an image_size param"
                )
            seed = params.get("seed")

            def decode(serialized):
                encoded, label = tfrecord.parse_jpeg_record(serialized)
                return image_preprocessing.decode(encoded, training, size, jpeg_style, seed), label

            ds = ds.map(decode, num_parallel_calls=tf.data.AUTOTUNE, deterministic=deterministic)
            ds = ds.batch(params["per_replica_batch_size"], drop_remainder=drop)
            ds = ds.map(
                lambda images, labels: preprocess(images, labels, mode, params),
                num_parallel_calls=tf.data.AUTOTUNE,
                deterministic=deterministic,
            )
        elif manifest.format == "raw_image":
            ds = ds.batch(params["per_replica_batch_size"], drop_remainder=drop)
            shape = manifest.image_shape

            def parse_and_preprocess(serialized):
                images, labels = tfrecord.parse_raw_image_batch(serialized, shape)
                return preprocess(images, labels, mode, params)

            ds = ds.map(
                parse_and_preprocess,
                num_parallel_calls=tf.data.AUTOTUNE,
                deterministic=deterministic,
            )
        else:
            raise errors.DataError(
                f"{params['data_dir']} holds {manifest.format!r} records, not images; "
                "this model reads raw_image or jpeg_image records"
            )
        options = tf.data.Options()
        options.deterministic = deterministic
        ds = ds.with_options(options)
        return ds.prefetch(tf.data.AUTOTUNE)

    return input_fn


def scale_image(image, label, mode, params):
    """uint8 -> float32 in [0, 1] (a batch): the MNIST/CIFAR Keras examples' preprocessing."""
    import tensorflow as tf

    del mode, params
    return tf.cast(image, tf.float32) / 255.0, label


def scale_rgb_image(image, label, mode, params):
    """scale_image for a model of square RGB images of `params["image_size"]` (CIFAR-10's
    convnet): records of another shape (the embedded 28x28 grey digits, 224x224 photos) are
    made RGB and resized to it, as the ImageNet models' preprocessing does."""
    import tensorflow as tf

    image, label = scale_image(image, label, mode, params)
    if image.shape[-1] == 1:
        image = tf.image.grayscale_to_rgb(image)
    size = params["image_size"]
    if tuple(image.shape[1:3]) != (size, size):
        image = tf.image.resize(image, (size, size))
    return image, label
