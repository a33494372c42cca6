"""lstm_textgen: Keras's character-level LSTM text generator (CPU-vs-GPU cost study).

Keras's `lstm_text_generation.py` on Nietzsche: windows of 40 characters,
3 apart, each predicting the character after it; one-hot input, one LSTM of
128 units, a softmax over the characters; RMSprop at 0.01, batch 128.  With
Nietzsche's 57 lower-cased characters: 102,585 parameters, 4 x (128 x (57 +
128) + 128) = 95,232 LSTM + 128 x 57 + 57 = 7,353 softmax.  The headline
metric is per-character perplexity (exp of the mean eval loss); accuracy of
the next character is reported too.  `--params=cudnn=false` keeps a GPU on
Keras's generic LSTM loop, as the study's Keras 2 ran it (no cuDNN kernel).

    tpubench train --model=lstm_textgen --train_steps=300 --steps_per_loop=20
    tpubench train --model=lstm_textgen --data_dir=PREPARED_NIETZSCHE --train_epochs=1

Without --data_dir it trains on the embedded `pydoc_chars` (Python's
documentation, character by character).  docs/models.md has the figures
measured here.
"""

import keras
import tensorflow as tf

from tpubench.data import text_pipeline
from tpubench.model import model_api, optim, recurrent, registry
from tpubench_models import _text


def build_model(params):
    inputs = keras.Input(shape=(params["window"],), dtype="int32")
    x = _text.OneHot(params["vocab_size"])(inputs)
    x = keras.layers.LSTM(params["lstm_units"], use_cudnn=recurrent.use_cudnn(params))(x)
    outputs = keras.layers.Dense(params["vocab_size"])(x)
    return keras.Model(inputs, outputs, name="lstm_textgen")


def build_optimizer(params):
    return optim.RMSprop(learning_rate=params["learning_rate"])


def element_spec(params):
    return tf.TensorSpec([params["window"]], tf.int32), tf.TensorSpec([], tf.int32)


def _window(params):
    return params["window"] + 1, params["step"]


def _to_example(windows, params):
    return windows[:, :-1], windows[:, -1]


SPEC = registry.register(
    model_api.ModelSpec(
        name="lstm_textgen",
        description="Keras character LSTM 128, next char of 40 (CPU-vs-GPU cost study)",
        build_model=build_model,
        build_optimizer=build_optimizer,
        model_fn=model_api.classification_model_fn,
        input_fn=text_pipeline.stream_input_fn("lstm_textgen", _window, _to_example),
        element_spec=element_spec,
        # Keras's example: 200,285 windows of Nietzsche (it trained on all of it).
        examples_per_epoch={"train": 200_285, "eval": 0},
        datasets=("nietzsche", "text_chars", "pydoc_chars"),
        default_params={
            "vocab_size": 57,
            "window": 40,
            "step": 3,
            "lstm_units": 128,
            "learning_rate": 0.01,
            "cudnn": True,  # false: Keras's generic loop on a GPU too (recurrent.use_cudnn)
        },
        tiny_params={"lstm_units": 32},
        target_metric="perplexity",
        target_mode="min",
        derived_metrics=model_api.perplexity_from("loss"),
        split_examples=text_pipeline.stream_examples(_window),
        default_batch_size=128,
    )
)
