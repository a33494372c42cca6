"""bilstm1024: the bidirectional LSTM text classifier of the TPU-vs-GPU comparison.

RiseML's 2018 Cloud TPU vs P100/V100 comparison measured a custom
bidirectional LSTM classifier "with 1,024 hidden units" (TPU 21,402
examples/s, P100 1,658, V100 2,778; batch 1,024 on the TPU, 128 on GPUs).
Its other dimensions were not published; tpubench fixes them as: 20,000-word
vocabulary, embedding 512, one bidirectional LSTM of 1,024 units per
direction, texts of 100 tokens, one sigmoid unit (two classes), Adam, batch
128.  22,833,153 parameters: 20,000 x 512 = 10,240,000 embedding +
2 x 4 x (1,024 x (512 + 1,024) + 1,024) = 12,591,104 LSTM + 2,049 head.
`--params=cudnn=false` keeps a GPU on Keras's generic LSTM loop (no cuDNN).

    tpubench train --model=bilstm1024 --use_synthetic_data --train_steps=20
    tpubench train --model=bilstm1024 --data_dir=PREPARED_IMDB --train_epochs=1

docs/models.md has the figures measured here.
"""

import keras

from tpubench.data import text_pipeline
from tpubench.model import model_api, optim, recurrent, registry
from tpubench_models import _text


def build_model(params):
    inputs = keras.Input(shape=(params["max_length"],), dtype="int32")
    x = keras.layers.Embedding(params["vocab_size"], params["embedding_dims"])(inputs)
    lstm = keras.layers.LSTM(params["lstm_units"], use_cudnn=recurrent.use_cudnn(params))
    x = keras.layers.Bidirectional(lstm)(x)
    outputs = keras.layers.Dense(_text.head_units(params))(x)
    return keras.Model(inputs, outputs, name="bilstm1024")


def build_optimizer(params):
    return optim.Adam(learning_rate=params["learning_rate"])


SPEC = registry.register(
    model_api.ModelSpec(
        name="bilstm1024",
        description="bidirectional LSTM classifier, 1,024 units (TPU-vs-GPU comparison)",
        build_model=build_model,
        build_optimizer=build_optimizer,
        model_fn=model_api.classification_model_fn,
        input_fn=text_pipeline.sequence_classification_input_fn("bilstm1024"),
        element_spec=_text.classifier_element_spec,
        examples_per_epoch={"train": 25_000, "eval": 25_000},
        datasets=("imdb", "pydoc_topics"),
        default_params={
            "vocab_size": 20_000,
            "max_length": 100,
            "embedding_dims": 512,
            "lstm_units": 1024,
            "num_classes": 2,
            "learning_rate": 0.001,
            "cudnn": True,  # false: Keras's generic loop on a GPU too (recurrent.use_cudnn)
        },
        tiny_params={
            "embedding_dims": 16,
            "lstm_units": 16,
            "max_length": 16,
            "learning_rate": 0.01,
        },
        default_batch_size=128,
    )
)
