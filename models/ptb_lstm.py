"""ptb_lstm: word-level 2-layer LSTM language model on Penn Treebank.

TensorFlow's PTB tutorial (`ptb_word_lm.py`, Zaremba et al. 2014), "small"
configuration: 10,000-word vocabulary, embedding and two LSTM layers of 200
units, a softmax over the vocabulary at every step, windows of 20 words,
batch 20, plain SGD at 1.0 with the gradient's global norm clipped at 5,
weights uniform in [-0.1, 0.1].  4,651,600 parameters: 2,000,000 embedding
+ 2 x 4 x (200 x (200 + 200) + 200) = 641,600 LSTM + 200 x 10,000 + 10,000
= 2,010,000 softmax.  `hidden_size=650,dropout=0.5` is the "medium"
configuration (19,775,200 parameters).  The reported loss is per word,
the mean over a window's words, so that perplexity = exp(loss); the
headline metric is per-word perplexity.  The tutorial's objective sums the
window's word losses, and its learning rate (1.0) and clipping norm (5)
assume that scale: `learning_rate` and `max_grad_norm` keep the tutorial's
meaning, and the optimizer takes them times and divided by `num_steps`, so
every update is the tutorial's (see build_optimizer).

`--params=cudnn=false` keeps a GPU on Keras's generic LSTM loop (no cuDNN
kernel; on CPU it changes nothing).

Unlike the tutorial, windows are independent (the LSTM state starts at zero
in every window, so any batch can go to any replica), which costs some
perplexity for the same number of steps.

    tpubench train --model=ptb_lstm --train_steps=500 --steps_per_loop=50
    tpubench train --model=ptb_lstm --data_dir=PREPARED_PTB --train_epochs=13

Without --data_dir it trains on the embedded `pydoc_words` (Python's
documentation as a word stream).  docs/models.md has the figures measured
here.
"""

import keras
import tensorflow as tf

from tpubench.data import text_pipeline
from tpubench.model import layers, model_api, recurrent, registry


def build_model(params):
    def init():  # a new one for each weight: one instance gives every weight the same values
        return keras.initializers.RandomUniform(-params["init_scale"], params["init_scale"])

    size = params["hidden_size"]
    inputs = keras.Input(shape=(params["num_steps"],), dtype="int32")
    x = keras.layers.Embedding(params["vocab_size"], size, embeddings_initializer=init())(inputs)
    for _ in range(params["num_layers"]):
        x = layers.Dropout(params["dropout"])(x)
        x = keras.layers.LSTM(
            size,
            return_sequences=True,
            kernel_initializer=init(),
            recurrent_initializer=init(),
            bias_initializer=init(),
            use_cudnn=recurrent.use_cudnn(params),
        )(x)
    x = layers.Dropout(params["dropout"])(x)
    outputs = keras.layers.Dense(params["vocab_size"], kernel_initializer=init())(x)
    return keras.Model(inputs, outputs, name="ptb_lstm")


def build_optimizer(params):
    """SGD taking the per-word loss's gradient to the tutorial's summed-loss update.

    With T words a window, the per-word gradient g is the summed one divided
    by T, so the tutorial's update lr * clip(T * g, c) equals
    (lr * T) * clip(g, c / T): the same steps at the same params.
    """
    steps = params["num_steps"]
    return keras.optimizers.SGD(
        learning_rate=params["learning_rate"] * steps,
        global_clipnorm=params["max_grad_norm"] / steps,
    )


def model_fn(model, features, labels, mode, params):
    logits = tf.cast(model(features, training=mode == model_api.Mode.TRAIN), tf.float32)
    predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
    if mode == model_api.Mode.PREDICT:
        return model_api.StepOutput(predictions={"next_word": predictions, "logits": logits})
    per_word = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    return model_api.StepOutput(
        per_example_loss=tf.reduce_mean(per_word, axis=1),
        predictions=predictions,
        metrics={
            "word_loss": tf.reduce_mean(per_word, axis=1),
            "accuracy": tf.reduce_mean(tf.cast(tf.equal(predictions, labels), tf.float32), 1),
        },
    )


def element_spec(params):
    steps = params["num_steps"]
    return tf.TensorSpec([steps], tf.int32), tf.TensorSpec([steps], tf.int32)


def _window(params):
    return params["num_steps"] + 1, params["num_steps"]


def _to_example(windows, params):
    return windows[:, :-1], windows[:, 1:]


SPEC = registry.register(
    model_api.ModelSpec(
        name="ptb_lstm",
        description="word-level 2-layer LSTM language model, PTB small (perplexity)",
        build_model=build_model,
        build_optimizer=build_optimizer,
        model_fn=model_fn,
        input_fn=text_pipeline.stream_input_fn("ptb_lstm", _window, _to_example),
        element_spec=element_spec,
        # PTB: 929,589 training and 73,760 validation words, in windows of 20.
        examples_per_epoch={"train": 46_479, "eval": 3_687},
        datasets=("ptb", "text_words", "pydoc_words"),
        default_params={
            "vocab_size": 10_000,
            "hidden_size": 200,
            "num_layers": 2,
            "num_steps": 20,
            "dropout": 0.0,
            "init_scale": 0.1,
            "learning_rate": 1.0,
            "max_grad_norm": 5.0,
            "cudnn": True,  # false: Keras's generic loop on a GPU too (recurrent.use_cudnn)
        },
        tiny_params={"hidden_size": 32},
        target_metric="perplexity",
        target_mode="min",
        derived_metrics=model_api.perplexity_from("word_loss"),
        split_examples=text_pipeline.stream_examples(_window),
        default_batch_size=20,
    )
)
