"""imdb_fasttext: fastText-style classifier (Keras's imdb_fasttext example).

Word embeddings (20,000 x 50) averaged over the text, then one sigmoid
unit: 1,000,051 parameters (1,000,000 + 50 + 1).  Keras's example pads IMDb
reviews to 400 tokens, batch 32, Adam, 5 epochs.  Here the average skips
padding (fastText averages the words of the text).  `bigrams=true` adds an
embedding row per neighbouring word pair, hashed into `bigram_buckets`
extra rows (fastText's hashing trick; Keras's example instead numbers every
bigram seen in training): 51,000,051 parameters with the default buckets.

    tpubench train --model=imdb_fasttext --train_steps=300 --steps_per_loop=50
    tpubench train --model=imdb_fasttext --data_dir=PREPARED_IMDB --train_epochs=5
    tpubench train --model=imdb_fasttext --params=bigrams=true --data_dir=PREPARED_IMDB

Without --data_dir it trains on the embedded `pydoc_topics` (8 topics of
Python's documentation).  docs/models.md has the figures measured here.
"""

import keras
import tensorflow as tf

from tpubench.data import text_pipeline
from tpubench.model import model_api, optim, registry
from tpubench_models import _text


class Bigrams(keras.layers.Layer):
    """ids [B, T] -> [B, 2T-1]: the words, then one hashed id per neighbouring pair.

    Pair ids live in [vocab_size, vocab_size + buckets); a pair touching
    padding (id 0) is padding too.
    """

    def __init__(self, vocab_size, buckets, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = int(vocab_size)
        self.buckets = int(buckets)

    def call(self, ids):
        first, second = ids[:, :-1], ids[:, 1:]
        pair = tf.cast(first, tf.int64) * self.vocab_size + tf.cast(second, tf.int64)
        # Knuth's multiplicative hash spreads neighbouring pairs over the buckets.
        bucket = tf.math.floormod(pair * 2654435761, self.buckets)
        pair_ids = tf.cast(bucket, ids.dtype) + self.vocab_size
        pair_ids = tf.where((first > 0) & (second > 0), pair_ids, tf.zeros_like(pair_ids))
        return tf.concat([ids, pair_ids], axis=1)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], 2 * input_shape[1] - 1)

    def get_config(self):
        return super().get_config() | {"vocab_size": self.vocab_size, "buckets": self.buckets}


class MaskedMean(keras.layers.Layer):
    """Mean of the embeddings of non-padding ids (an all-padding text averages to 0)."""

    def call(self, embedded, ids):
        keep = tf.cast(ids > 0, embedded.dtype)[..., None]
        count = tf.maximum(tf.reduce_sum(keep, axis=1), 1.0)
        return tf.reduce_sum(embedded * keep, axis=1) / count


def build_model(params):
    inputs = keras.Input(shape=(params["max_length"],), dtype="int32")
    ids, rows = inputs, params["vocab_size"]
    if params["bigrams"]:
        ids = Bigrams(params["vocab_size"], params["bigram_buckets"])(inputs)
        rows += params["bigram_buckets"]
    x = keras.layers.Embedding(rows, params["embedding_dims"])(ids)
    x = MaskedMean()(x, ids)
    outputs = keras.layers.Dense(_text.head_units(params))(x)
    return keras.Model(inputs, outputs, name="imdb_fasttext")


def build_optimizer(params):
    return optim.Adam(learning_rate=params["learning_rate"])


SPEC = registry.register(
    model_api.ModelSpec(
        name="imdb_fasttext",
        description="fastText-style embedding average, optional bigrams (cost study)",
        build_model=build_model,
        build_optimizer=build_optimizer,
        model_fn=model_api.classification_model_fn,
        input_fn=text_pipeline.sequence_classification_input_fn("imdb_fasttext"),
        element_spec=_text.classifier_element_spec,
        examples_per_epoch={"train": 25_000, "eval": 25_000},
        datasets=("imdb", "pydoc_topics"),
        default_params={
            "vocab_size": 20_000,
            "max_length": 400,
            "embedding_dims": 50,
            "bigrams": False,
            "bigram_buckets": 1_000_000,
            "num_classes": 2,
            "learning_rate": 0.001,
        },
        tiny_params={
            "embedding_dims": 8,
            "max_length": 64,
            "bigram_buckets": 1000,
            "learning_rate": 0.01,
        },
        default_batch_size=32,
    )
)
