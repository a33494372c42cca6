"""imdb_bilstm: the Keras IMDb bidirectional LSTM of the CPU-vs-GPU cost study.

Keras's `imdb_bidirectional_lstm.py`: 20,000-word vocabulary, embedding 128,
a bidirectional LSTM of 64 units per direction, dropout 0.5, one sigmoid
unit; reviews padded to 100 tokens, batch 32, Adam.  2,658,945 parameters:
20,000 x 128 = 2,560,000 embedding + 2 x 4 x (64 x (128 + 64) + 64) = 98,816
LSTM + 129 head.  `num_layers=2` is the keras.io version of the example
(two stacked bidirectional LSTMs): 2,757,761 parameters.  The LSTM layers
are plain Keras layers: cuDNN on a GPU, Keras's loop on CPU and TPU, and
the run record says which ran (`recurrent`); `--params=cudnn=false` keeps
a GPU on Keras's loop too, as the study's Keras 2 ran it.

    tpubench train --model=imdb_bilstm --train_steps=200 --steps_per_loop=10
    tpubench train --model=imdb_bilstm --data_dir=PREPARED_IMDB --train_epochs=4

Without --data_dir it trains on the embedded `pydoc_topics` (8 topics of
Python's documentation).  docs/models.md has the figures measured here.
"""

import keras

from tpubench.data import text_pipeline
from tpubench.model import layers, model_api, optim, recurrent, registry
from tpubench_models import _text


def build_model(params):
    inputs = keras.Input(shape=(params["max_length"],), dtype="int32")
    x = keras.layers.Embedding(params["vocab_size"], params["embedding_dims"])(inputs)
    for i in range(params["num_layers"]):
        last = i == params["num_layers"] - 1
        x = keras.layers.Bidirectional(
            keras.layers.LSTM(
                params["lstm_units"],
                return_sequences=not last,
                use_cudnn=recurrent.use_cudnn(params),
            )
        )(x)
    x = layers.Dropout(params["dropout"])(x)
    outputs = keras.layers.Dense(_text.head_units(params))(x)
    return keras.Model(inputs, outputs, name="imdb_bilstm")


def build_optimizer(params):
    return optim.Adam(learning_rate=params["learning_rate"])


SPEC = registry.register(
    model_api.ModelSpec(
        name="imdb_bilstm",
        description="Keras IMDb bidirectional LSTM, 64 units (CPU-vs-GPU cost study)",
        build_model=build_model,
        build_optimizer=build_optimizer,
        model_fn=model_api.classification_model_fn,
        input_fn=text_pipeline.sequence_classification_input_fn("imdb_bilstm"),
        element_spec=_text.classifier_element_spec,
        examples_per_epoch={"train": 25_000, "eval": 25_000},
        datasets=("imdb", "pydoc_topics"),
        default_params={
            "vocab_size": 20_000,
            "max_length": 100,
            "embedding_dims": 128,
            "lstm_units": 64,
            "num_layers": 1,
            "dropout": 0.5,
            "num_classes": 2,
            "learning_rate": 0.001,
            "cudnn": True,  # false: Keras's generic loop on a GPU too (recurrent.use_cudnn)
        },
        tiny_params={
            "embedding_dims": 16,
            "lstm_units": 8,
            "max_length": 32,
            "learning_rate": 0.01,
        },
        default_batch_size=32,
    )
)
