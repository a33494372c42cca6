"""bert_base: a BERT-base-sized Transformer encoder trained as a masked-language model.

Today's kind of model next to the 2017 ones: 12 layers, hidden 768, 12
heads, feed-forward 3,072, GELU, post-layer-norm, 512 positions, 2 token
types, a 30,522-id vocabulary, sequences of 128 tokens; 20 positions per
sequence are predicted (BERT's max_predictions_per_seq at length 128), of
which 80% are shown as MASK, 10% as a random word and 10% unchanged.  The
output layer shares the token embedding (as in BERT).  AdamW at 1e-4 with
weight decay 0.01 (no warm-up or decay schedule), batch 32.

Parameters, exactly: embeddings 30,522 x 768 + 512 x 768 + 2 x 768 + layer
norm 1,536 = 23,837,184; each layer 7,087,872 (attention 4 x (768 x 768 +
768) = 2,362,368, feed-forward 768 x 3,072 + 3,072 + 3,072 x 768 + 768 =
4,722,432, two layer norms 3,072), 12 layers 85,054,464; encoder and
embeddings 108,891,648 (BERT-base's "110M" without its pooler).  The MLM
head adds 622,650 (dense 590,592, layer norm 1,536, output bias 30,522):
109,514,298 trainable.  There is no next-sentence head.

Words, not WordPieces: the vocabulary is the corpus's own most frequent
words (`tpubench data prepare --dataset=text_words` keeps up to 30,522).
Which positions are masked is a hash of the sequence's tokens, so any
replica masks an example the same way and the same window is masked the
same way every epoch (BERT's original data also fixed its masks when it
was prepared).

    tpubench train --model=bert_base --use_synthetic_data --train_steps=6
    tpubench train --model=bert_base --tiny --train_steps=300 --steps_per_loop=50

Without --data_dir it trains on the embedded `pydoc_words` (Python's
documentation as a word stream).  docs/models.md has the figures measured
here.
"""

import keras
import tensorflow as tf

from tpubench.data import text, text_pipeline
from tpubench.model import layers, model_api, registry


def _init():
    """A new initializer for each weight: one instance, or an integer seed, gives every
    weight the same values (model/randomness.py); --seed seeds them all."""
    return keras.initializers.TruncatedNormal(stddev=0.02)


def _layer_norm():
    return keras.layers.LayerNormalization(epsilon=1e-12)


class Embeddings(keras.layers.Layer):
    """Token + position + token-type embeddings, layer norm, dropout; holds the
    token table the output layer reuses."""

    def __init__(self, params, **kwargs):
        super().__init__(**kwargs)
        self.p = {k: params[k] for k in ("vocab_size", "hidden_size", "max_positions")}
        self.dropout = layers.Dropout(params["dropout"])
        self.norm = _layer_norm()

    def build(self, input_shape):
        p = self.p
        self.tokens = self.add_weight(
            shape=(p["vocab_size"], p["hidden_size"]), initializer=_init(), name="tokens"
        )
        self.positions = self.add_weight(
            shape=(p["max_positions"], p["hidden_size"]), initializer=_init(), name="positions"
        )
        self.types = self.add_weight(shape=(2, p["hidden_size"]), initializer=_init(), name="types")
        self.norm.build((*input_shape, p["hidden_size"]))

    def call(self, ids, training=False):
        length = tf.shape(ids)[1]
        x = tf.gather(self.tokens, ids) + self.positions[None, :length] + self.types[0]
        return self.dropout(self.norm(x), training=training)

    def compute_output_shape(self, input_shape):
        return (*input_shape, self.p["hidden_size"])


class SelfAttention(keras.layers.Layer):
    """Multi-head self-attention from Dense projections and plain matmuls.

    Same parameters as keras.layers.MultiHeadAttention; written out because
    TensorFlow's FLOP profiler miscounts the gradients of Keras's einsum
    projections (8x the forward pass instead of about 2x).
    """

    def __init__(self, params, **kwargs):
        super().__init__(**kwargs)
        self.heads, self.size = params["num_heads"], params["hidden_size"]
        self.q, self.k, self.v, self.out = (
            keras.layers.Dense(self.size, kernel_initializer=_init()) for _ in range(4)
        )
        self.dropout = layers.Dropout(params["dropout"])

    def call(self, x, training=False):
        batch, length = tf.shape(x)[0], tf.shape(x)[1]
        depth = self.size // self.heads

        def heads(t):  # [B, L, H] -> [B, heads, L, depth]
            return tf.transpose(tf.reshape(t, [batch, length, self.heads, depth]), [0, 2, 1, 3])

        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        scores = tf.matmul(q, k, transpose_b=True) / tf.cast(depth, x.dtype) ** 0.5
        weights = self.dropout(tf.nn.softmax(scores), training=training)
        context = tf.transpose(tf.matmul(weights, v), [0, 2, 1, 3])
        return self.out(tf.reshape(context, [batch, length, self.size]))

    def compute_output_shape(self, input_shape):
        return input_shape


def _encoder_layer(x, params):
    size = params["hidden_size"]
    attention = SelfAttention(params)(x)
    attention = layers.Dropout(params["dropout"])(attention)
    x = _layer_norm()(x + attention)
    hidden = keras.layers.Dense(params["intermediate_size"], "gelu", kernel_initializer=_init())(x)
    out = keras.layers.Dense(size, kernel_initializer=_init())(hidden)
    out = layers.Dropout(params["dropout"])(out)
    return _layer_norm()(x + out)


class GatherPositions(keras.layers.Layer):
    """[B, L, H] states and [B, P] positions -> [B, P, H]."""

    def call(self, states, positions):
        return tf.gather(states, positions, batch_dims=1)

    def compute_output_shape(self, states_shape, positions_shape):
        return (*positions_shape, states_shape[-1])


class TiedOutput(keras.layers.Layer):
    """Logits over the vocabulary through the (shared) token embedding table, plus a bias."""

    def __init__(self, embeddings, **kwargs):
        super().__init__(**kwargs)
        self.embeddings = embeddings

    def build(self, input_shape):
        rows = self.embeddings.p["vocab_size"]
        self.bias = self.add_weight(shape=(rows,), initializer="zeros", name="bias")

    def call(self, x):
        table = tf.cast(self.embeddings.tokens, x.dtype)
        # A 2-D matmul: the batched form is slower and miscounted by the FLOP profiler.
        flat = tf.reshape(x, [-1, x.shape[-1]])
        logits = tf.matmul(flat, table, transpose_b=True) + tf.cast(self.bias, x.dtype)
        return tf.reshape(logits, tf.concat([tf.shape(x)[:-1], [-1]], axis=0))

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.embeddings.p["vocab_size"])


def build_model(params):
    ids = keras.Input(shape=(params["seq_length"],), dtype="int32", name="input_ids")
    positions = keras.Input(shape=(params["max_predictions"],), dtype="int32", name="positions")
    embeddings = Embeddings(params, name="embeddings")
    x = embeddings(ids)
    for _ in range(params["num_layers"]):
        x = _encoder_layer(x, params)
    # Only the predicted positions go through the MLM head.
    picked = GatherPositions()(x, positions)
    h = keras.layers.Dense(params["hidden_size"], "gelu", kernel_initializer=_init())(picked)
    logits = TiedOutput(embeddings, name="mlm_output")(_layer_norm()(h))
    return keras.Model({"input_ids": ids, "positions": positions}, logits, name="bert_base")


def build_optimizer(params):
    optimizer = keras.optimizers.AdamW(
        learning_rate=params["learning_rate"], weight_decay=params["weight_decay"], epsilon=1e-6
    )
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    return optimizer


_MOD = 2**32


def _mix(x):
    """A 32-bit integer hash (int64 arithmetic, values kept in [0, 2**32))."""
    for _ in range(2):
        x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, 16))
        x = tf.math.floormod(x * 0x45D9F3B, _MOD)
    return tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, 16))


def mask_tokens(ids, params):
    """(masked ids [B, L], positions [B, P], original ids there [B, P]).

    A deterministic function of each sequence: P positions with the highest
    hash of (token, position, the whole sequence); 80% become MASK, 10% a
    random non-special word, 10% stay.
    """
    vocab, count = params["vocab_size"], params["max_predictions"]
    ids64 = tf.cast(ids, tf.int64)
    length = tf.shape(ids)[1]
    place = tf.range(1, length + 1, dtype=tf.int64)[None, :]
    salt = tf.math.floormod(tf.reduce_sum(ids64 * place, axis=1, keepdims=True), _MOD)
    score = _mix(tf.math.floormod(ids64 * 2654435761 + place * 40503 + salt, _MOD))
    _, positions = tf.math.top_k(tf.cast(score, tf.float32), k=count)
    targets = tf.gather(ids, positions, batch_dims=1)
    chosen = tf.gather(score, positions, batch_dims=1)
    roll = tf.math.floormod(_mix(chosen + 1), 10)
    random_word = text.MASK + 1 + tf.math.floormod(_mix(chosen + 2), vocab - text.MASK - 1)
    shown = tf.where(
        roll < 8,
        tf.fill(tf.shape(targets), tf.constant(text.MASK, targets.dtype)),
        tf.where(roll < 9, tf.cast(random_word, targets.dtype), targets),
    )
    batch = tf.shape(ids)[0]
    rows = tf.broadcast_to(tf.range(batch)[:, None], tf.shape(positions))
    masked = tf.tensor_scatter_nd_update(ids, tf.stack([rows, positions], axis=-1), shown)
    return masked, positions, targets


def model_fn(model, features, labels, mode, params):
    del labels  # the targets are the input words themselves
    masked, positions, targets = mask_tokens(features, params)
    training = mode == model_api.Mode.TRAIN
    logits = tf.cast(
        model({"input_ids": masked, "positions": positions}, training=training), "float32"
    )
    predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
    if mode == model_api.Mode.PREDICT:
        return model_api.StepOutput(predictions={"positions": positions, "words": predictions})
    per_token = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=targets, logits=logits)
    correct = tf.cast(tf.equal(predictions, targets), tf.float32)
    return model_api.StepOutput(
        per_example_loss=tf.reduce_mean(per_token, axis=1),
        predictions=predictions,
        metrics={"mlm_accuracy": tf.reduce_mean(correct, axis=1)},
    )


def element_spec(params):
    # Labels are unused (the model predicts its own input); a scalar keeps
    # synthetic data and the input pipeline simple.
    return tf.TensorSpec([params["seq_length"]], tf.int32), tf.TensorSpec([], tf.int32)


def _window(params):
    return params["seq_length"], params["seq_length"]


def _to_example(windows, params):
    return windows, tf.zeros(tf.shape(windows)[:1], tf.int32)


SPEC = registry.register(
    model_api.ModelSpec(
        name="bert_base",
        description="BERT-base encoder (12x768), masked-language-model objective",
        build_model=build_model,
        build_optimizer=build_optimizer,
        model_fn=model_fn,
        input_fn=text_pipeline.stream_input_fn("bert_base", _window, _to_example),
        element_spec=element_spec,
        # BERT's pre-training corpus, 3.3B words, in sequences of 128 (approximate).
        examples_per_epoch={"train": 25_781_250, "eval": 0},
        datasets=("text_words", "ptb", "pydoc_words"),
        default_params={
            "vocab_size": 30_522,
            "hidden_size": 768,
            "num_layers": 12,
            "num_heads": 12,
            "intermediate_size": 3072,
            "max_positions": 512,
            "seq_length": 128,
            "max_predictions": 20,
            "dropout": 0.1,
            "learning_rate": 1e-4,
            "weight_decay": 0.01,
        },
        tiny_params={
            "vocab_size": 2000,
            "hidden_size": 64,
            "num_layers": 2,
            "num_heads": 4,
            "intermediate_size": 128,
            "max_positions": 128,
            "seq_length": 64,
            "max_predictions": 10,
            "learning_rate": 1e-3,
        },
        target_metric="mlm_accuracy",
        derived_metrics=model_api.perplexity_from("loss"),
        split_examples=text_pipeline.stream_examples(_window),
        default_batch_size=32,
    )
)
