"""The text models: published sizes, real embedded text, learning, replicas, recurrent path.

The embedded text is Python's own reference documentation
(`pydoc_data.topics`, shipped with every CPython).  Runs through the CLI
use 2 logical CPU devices, so each also proves the model trains unchanged
on 2 replicas.  The learning targets of the slower models run under
`make test-slow`.
"""

from __future__ import annotations

import json
import math
import pathlib

import numpy as np
import pytest
from conftest import run_cli

from tpubench.core import errors
from tpubench.data import embedded, pydoc_corpus, text, text_pipeline, text_sources
from tpubench.data import manifest as manifest_lib
from tpubench.model import model_api, recurrent, registry

TEXT_MODELS = (
    "imdb_fasttext",
    "imdb_bilstm",
    "bilstm1024",
    "lstm_textgen",
    "ptb_lstm",
    "bert_base",
)


def _build(name, **overrides):
    spec = registry.get(name)
    params = registry.resolve_params(spec, {k: str(v) for k, v in overrides.items()})
    params.setdefault("seed", 0)
    return spec, params, spec.build_model(params)


def _count(model) -> int:
    return int(sum(v.shape.num_elements() for v in model.trainable_variables))


def lstm(inputs, units):
    """Parameters of one Keras LSTM: 4 gates x (input and recurrent kernels + bias)."""
    return 4 * (units * (inputs + units) + units)


@pytest.mark.parametrize(
    "name, overrides, expected",
    [
        # Keras imdb_bidirectional_lstm.py (the cost study): 20k x 128, BiLSTM 64, 1 unit.
        ("imdb_bilstm", {}, 20_000 * 128 + 2 * lstm(128, 64) + 129),
        # keras.io's version of the example stacks two: the published 2,757,761.
        ("imdb_bilstm", {"num_layers": 2}, 2_757_761),
        ("bilstm1024", {}, 20_000 * 512 + 2 * lstm(512, 1024) + 2 * 1024 + 1),
        ("imdb_fasttext", {}, 20_000 * 50 + 50 + 1),
        ("imdb_fasttext", {"bigrams": True}, (20_000 + 1_000_000) * 50 + 51),
        # Keras lstm_text_generation.py on Nietzsche's 57 characters.
        ("lstm_textgen", {}, lstm(57, 128) + 128 * 57 + 57),
        # TF PTB tutorial, small and medium configurations.
        ("ptb_lstm", {}, 10_000 * 200 + lstm(200, 200) * 2 + 200 * 10_000 + 10_000),
        ("ptb_lstm", {"hidden_size": 650}, 19_775_200),
    ],
)
def test_parameter_counts_match_the_published_architectures(name, overrides, expected):
    _, _, model = _build(name, **overrides)
    assert _count(model) == expected


def test_the_study_bilstm_and_textgen_sizes():
    assert _count(_build("imdb_bilstm")[2]) == 2_658_945
    assert _count(_build("lstm_textgen")[2]) == 102_585
    assert _count(_build("ptb_lstm")[2]) == 4_651_600


def test_bert_base_has_bert_base_size():
    _, _, model = _build("bert_base")
    # 30,522-word vocabulary, 512 positions, 2 token types, 12 x 768, FFN 3,072.
    embeddings = 30_522 * 768 + 512 * 768 + 2 * 768 + 2 * 768
    layer = 4 * (768 * 768 + 768) + (768 * 3072 + 3072) + (3072 * 768 + 768) + 2 * 2 * 768
    assert embeddings + 12 * layer == 108_891_648  # BERT-base without its pooler
    mlm_head = (768 * 768 + 768) + 2 * 768 + 30_522
    assert _count(model) == 108_891_648 + mlm_head == 109_514_298


# ----------------------------------------------------------- embedded text
def _vocabulary(data_dir: str) -> list[str]:
    """The vocabulary file a prepared text dataset keeps beside its records."""
    return json.loads((pathlib.Path(data_dir) / text.VOCAB_FILE).read_text())


@pytest.fixture(scope="module")
def prepared():
    return {n: manifest_lib.read(embedded.ensure_prepared(n)) for n in pydoc_corpus.PREPARERS}


def test_embedded_corpus_is_real_documentation_text(prepared):
    stats = pydoc_corpus.stats()
    assert stats["words"] > 60_000 and stats["characters"] > 300_000
    topics = prepared["pydoc_topics"]
    assert topics.format == text.SEQUENCES and topics.num_classes == 8
    assert {"debugger", "string-methods", "compound"} <= set(topics.labels)
    assert topics.split("train").examples > 600 and topics.split("test").examples > 150
    vocab = _vocabulary(topics.data_dir)
    assert vocab[:4] == list(text.SPECIALS) and "python" in vocab and "statement" in vocab
    words = prepared["pydoc_words"]
    assert words.format == text.STREAM and words.vocab_size == len(_vocabulary(words.data_dir))
    assert words.split("train").tokens > 60_000 and words.split("test").tokens > 5_000
    chars = prepared["pydoc_chars"]
    vocab = _vocabulary(chars.data_dir)
    assert chars.vocab_size == len(vocab) < 120 and "e" in vocab and "E" not in vocab


def test_embedded_preparation_is_deterministic(prepared, tmp_path):
    again = pydoc_corpus.prepare_words(str(tmp_path / "words"))
    assert again.fingerprint == prepared["pydoc_words"].fingerprint
    assert again.splits == prepared["pydoc_words"].splits


def test_embedded_datasets_take_no_source(tmp_path):
    with pytest.raises(errors.UsageError, match="takes no --source"):
        pydoc_corpus.prepare_chars(str(tmp_path), "/some/file.txt")


def test_stream_window_counts_match_what_the_pipeline_yields(prepared):
    import tensorflow as tf

    manifest = prepared["pydoc_words"]
    spec = registry.get("ptb_lstm")
    params = registry.resolve_params(spec, {}, tiny=True)
    params.update(per_replica_batch_size=64, data_dir=manifest.data_dir, seed=0)
    counted = model_api.examples_in(spec, manifest, "test", params)
    batches = list(spec.input_fn(params, None, model_api.Mode.EVAL))
    assert sum(int(tf.shape(x)[0]) for x, _ in batches) == counted > 0
    x, y = batches[0]
    assert x.shape[1] == y.shape[1] == params["num_steps"]
    # The targets are the inputs shifted by one word.
    np.testing.assert_array_equal(x.numpy()[:, 1:], y.numpy()[:, :-1])


def test_pad_front_keeps_the_end_of_long_texts():
    import tensorflow as tf

    ragged = tf.ragged.constant([[5, 6, 7, 8, 9], [4], []], dtype=tf.int32)
    out = text_pipeline.pad_front(ragged, 3).numpy()
    np.testing.assert_array_equal(out, [[7, 8, 9], [0, 0, 4], [0, 0, 0]])


def test_classifier_reads_the_embedded_topics(prepared):
    spec = registry.get("imdb_bilstm")
    params = registry.resolve_params(spec, {}, tiny=True)
    params.update(per_replica_batch_size=16, data_dir=prepared["pydoc_topics"].data_dir, seed=0)
    x, y = next(iter(spec.input_fn(params, None, model_api.Mode.TRAIN)))
    assert x.shape == (16, params["max_length"]) and x.dtype.name == "int32"
    assert set(y.numpy()) <= set(range(8)) and int(x.numpy().max()) < 3000


def test_a_model_refuses_the_wrong_text_layout(prepared):
    spec = registry.get("ptb_lstm")
    params = dict(registry.resolve_params(spec, {}, tiny=True), per_replica_batch_size=4, seed=0)
    params["data_dir"] = prepared["pydoc_topics"].data_dir
    with pytest.raises(errors.DataError, match="token_stream records but"):
        spec.input_fn(params, None, model_api.Mode.TRAIN)


# -------------------------------------------------------------- preparers
def test_ptb_preparer_reads_the_three_files(tmp_path):
    # Real text in PTB's form: lower-case words, one sentence a line.
    paras = [p for _, p in pydoc_corpus.paragraphs()[0]][:300]
    lines = [" ".join(text.words(p)) for p in paras]
    for name, part in (("train", lines[:200]), ("valid", lines[200:250]), ("test", lines[250:])):
        (tmp_path / f"ptb.{name}.txt").write_text("\n".join(part) + "\n")
    m = text_sources.PREPARERS["ptb"](str(tmp_path / "out"), str(tmp_path))
    assert set(m.splits) == {"train", "validation", "test"} and m.format == text.STREAM
    assert m.eval_split() == "validation"
    assert m.split("train").tokens == sum(len(x.split()) + 1 for x in lines[:200])


def test_imdb_preparer_reads_an_aclimdb_folder(tmp_path):
    paras = [p for _, p in pydoc_corpus.paragraphs()[0]][:40]
    for split in ("train", "test"):
        for label in ("neg", "pos"):
            folder = tmp_path / "aclImdb" / split / label
            folder.mkdir(parents=True)
            for i, p in enumerate(paras[:10] if label == "neg" else paras[10:20]):
                (folder / f"{i}_1.txt").write_text(p.replace("\n", "<br />"))
    m = text_sources.PREPARERS["imdb"](str(tmp_path / "out"), str(tmp_path))
    assert m.labels == ("neg", "pos") and m.num_classes == 2
    assert m.split("train").examples == m.split("test").examples == 20
    assert "br" not in _vocabulary(m.data_dir)


@pytest.mark.parametrize("name", ["imdb", "ptb", "nietzsche", "text_words"])
def test_preparers_name_a_missing_source(name, tmp_path):
    with pytest.raises(errors.DataError) as e:
        text_sources.PREPARERS[name](str(tmp_path / "out"), str(tmp_path / "nope"))
    assert "nope does not exist" in str(e.value) and "\n" not in str(e.value)


def test_offline_download_says_how_to_supply_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(text_sources, "PTB_URL", "http://127.0.0.1:9/simple-examples.tgz")
    with pytest.raises(errors.DataError) as e:
        text_sources.prepare_ptb(str(tmp_path / "out"))
    message = str(e.value)
    assert message.startswith("cannot download http://127.0.0.1:9/simple-examples.tgz")
    assert "--source=" in message and "\n" not in message


# -------------------------------------------------------------- recurrent
@pytest.mark.parametrize("name", ["imdb_bilstm", "bilstm1024", "lstm_textgen", "ptb_lstm"])
def test_every_lstm_meets_cudnn_conditions(name):
    _, _, model = _build(name)
    layers = recurrent.rnn_layers(model)
    assert layers
    for layer in layers:
        assert all(recurrent.cudnn_conditions(layer).values()), layer.name


RECURRENT = ("imdb_bilstm", "bilstm1024", "lstm_textgen", "ptb_lstm")


@pytest.mark.parametrize("name", RECURRENT)
def test_cudnn_false_reaches_every_recurrent_layer(name):
    """`--params=cudnn=false` (the CPU-vs-GPU seed's Keras 2): no layer may take cuDNN."""
    spec = registry.get(name)
    assert registry.resolve_params(spec, {})["cudnn"] is True  # Keras picks, by default
    _, params, model = _build(name, cudnn="false")
    assert params["cudnn"] is False
    layers = recurrent.rnn_layers(model)
    assert layers and all(layer.use_cudnn is False for layer in layers)
    assert not any(recurrent.cudnn_conditions(x)["use_cudnn"] for x in layers)
    assert {x.use_cudnn for x in recurrent.rnn_layers(_build(name)[2])} == {"auto"}


def test_a_cudnn_value_that_is_not_true_or_false_is_one_line():
    with pytest.raises(errors.UsageError) as e:
        registry.resolve_params(registry.get("lstm_textgen"), {"cudnn": "maybe"})
    assert str(e.value) == "--params: cudnn='maybe' is not a valid bool (default is True)"


def test_the_record_says_cudnn_was_turned_off_on_each_device():
    import keras

    inputs = keras.Input((5, 3))
    model = keras.Model(inputs, keras.layers.LSTM(4, use_cudnn=False)(inputs))
    gpu = recurrent.describe(model, {"MatMul", "While"}, "gpu")
    assert gpu["implementation"] == "keras-generic-loop" and gpu["cudnn"] == "off"
    assert gpu["reason"].startswith("cuDNN turned off (the model's cudnn=false)")
    assert gpu["layers"][0]["failed_conditions"] == ["use_cudnn"]
    cpu = recurrent.describe(model, {"MatMul", "While"}, "cpu")  # cuDNN never applies here
    assert cpu["implementation"] == "keras-generic-loop" and "no GPU" in cpu["reason"]
    assert cpu["cudnn"] == "off"
    auto = keras.Model(inputs, keras.layers.LSTM(4)(inputs))
    assert recurrent.describe(auto, {"CudnnRNNV3"}, "gpu")["cudnn"] == "auto"


def test_a_layer_that_cannot_use_cudnn_is_named():
    import keras

    inputs = keras.Input((5, 3))
    model = keras.Model(inputs, keras.layers.LSTM(4, recurrent_dropout=0.1)(inputs))
    info = recurrent.describe(model, {"MatMul"}, "gpu")
    assert info["implementation"] == "keras-generic-loop"
    assert info["layers"][0]["failed_conditions"] == ["recurrent_dropout"]
    assert recurrent.describe(model, {"CudnnRNNV3"}, "gpu")["implementation"] == "cudnn"


def test_flops_of_recurrent_layers_are_counted():
    from tpubench.model import flops as flops_lib

    spec = registry.get("lstm_textgen")
    params = registry.resolve_params(spec, {})
    params.update(seed=0, per_replica_batch_size=2, global_batch_size=2)
    counted = flops_lib.count_flops(spec, params)
    # 40 steps of x @ W and h @ R with 4 gates: 2 x 4 x 128 x (57 + 128) FLOPs each.
    matmuls = 40 * 2 * 4 * 128 * (57 + 128)
    assert matmuls < counted["forward_flops_per_example"] < 1.2 * matmuls


# ------------------------------------------------------------ the metric
def test_perplexity_is_exp_of_the_mean_token_loss():
    derive = model_api.perplexity_from("word_loss")
    assert derive({"word_loss": math.log(120.0)})["perplexity"] == pytest.approx(120.0)
    spec = registry.get("ptb_lstm")
    assert (spec.target_metric, spec.target_mode) == ("perplexity", "min")
    assert model_api.reached(spec, 99.0, 100.0) and not model_api.reached(spec, 101.0, 100.0)


def test_bert_masking_is_a_function_of_the_sequence():
    import tensorflow as tf

    spec, params, _ = _build("bert_base", vocab_size=1000, num_layers=1)
    ids = tf.constant(np.random.default_rng(0).integers(4, 1000, size=(6, 128)), tf.int32)
    masked, positions, targets = spec.model_fn.__globals__["mask_tokens"](ids, params)
    again = spec.model_fn.__globals__["mask_tokens"](ids[3:], params)
    np.testing.assert_array_equal(masked.numpy()[3:], again[0].numpy())
    changed = (masked.numpy() != ids.numpy()).sum(axis=1)
    assert positions.shape == (6, 20) and (changed <= 20).all() and changed.mean() > 14
    np.testing.assert_array_equal(targets, tf.gather(ids, positions, batch_dims=1))
    assert (masked.numpy() == text.MASK).sum(axis=1).mean() == pytest.approx(16, abs=4)


# ------------------------------------------------ training through the CLI
def _train(tmp_path, model, *args, timeout=400):
    proc, record = run_cli(
        "train",
        f"--model={model}",
        "--tiny",
        "--num_cpu_devices=2",
        f"--model_dir={tmp_path / 'model'}",
        *args,
        results_dir=tmp_path / "runs",
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr
    assert record["placement"]["num_replicas"] == 2
    return proc, record


def test_fasttext_learns_the_topics_on_two_replicas(tmp_path):
    proc, rec = _train(tmp_path, "imdb_fasttext", "--train_steps=300", "--steps_per_loop=50")
    assert rec["data"]["name"] == "pydoc_topics" and rec["data"]["vocab_size"] > 2000
    assert rec["model"]["params"]["vocab_size"] == rec["data"]["vocab_size"]
    assert rec["model"]["params"]["num_classes"] == 8
    assert rec["results"]["eval"]["accuracy"] >= 0.75  # 8 topics; the largest is 17%
    assert "eval accuracy" in proc.stdout
    assert "recurrent" not in rec


def test_the_traced_cpu_step_runs_keras_generic_loop():
    import tensorflow as tf

    from tpubench.run import runner as runner_lib

    spec = registry.get("lstm_textgen")
    params = registry.resolve_params(spec, {}, tiny=True)
    params.update(seed=0, per_replica_batch_size=4, global_batch_size=4)
    # On the CPU even on a GPU machine: the generic loop is what is checked here.
    runner = runner_lib.Runner(spec, params, tf.distribute.OneDeviceStrategy("/cpu:0"))
    fixed = runner.synthetic_inputs(0)
    runner.make_train_loop(lambda: fixed)(tf.constant(1, tf.int32))
    ops = runner.traced_op_types()
    assert {"While", "StatelessWhile"} & ops and not ops & recurrent.CUDNN_OPS
    info = recurrent.describe(runner.model, ops, "cpu")
    assert info["implementation"] == "keras-generic-loop" and "no GPU" in info["reason"]
    assert info["layers"] == [
        {
            "layer": runner.model.layers[2].name,
            "class": "LSTM",
            "units": 32,
            "cudnn_eligible": True,
            "failed_conditions": [],
        }
    ]


def test_cudnn_false_on_the_cpu_trains_and_the_record_says_what_ran(tmp_path):
    """On a CPU cuDNN never applies: the flag changes nothing there, and the record keeps
    the hyperparameter (model.params) beside what the traced step ran (recurrent)."""
    proc, rec = run_cli(
        "train", "--model=lstm_textgen", "--tiny", "--params=cudnn=false", "--accelerator=cpu",
        "--train_steps=4", "--steps_per_loop=2", f"--model_dir={tmp_path / 'model'}",
        results_dir=tmp_path / "runs",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert rec["status"] == "ok" and rec["model"]["params"]["cudnn"] is False
    assert rec["flags"]["params"] == ["cudnn=false"]
    rnn = rec["recurrent"]
    assert (rnn["implementation"], rnn["cudnn"]) == ("keras-generic-loop", "off")
    assert "no GPU" in rnn["reason"] and rnn["layers"][0]["failed_conditions"] == ["use_cudnn"]


@pytest.mark.slow
def test_ptb_lstm_reaches_a_perplexity_and_records_its_lstm_path(tmp_path):
    proc, rec = _train(
        tmp_path,
        "ptb_lstm",
        "--train_steps=200",
        "--steps_per_loop=50",
        "--eval_steps=10",
        "--accelerator=cpu",
    )
    assert rec["data"]["name"] == "pydoc_words"
    ev = rec["results"]["eval"]
    assert ev["perplexity"] == pytest.approx(math.exp(ev["word_loss"]))
    assert ev["perplexity"] < 80  # a unigram model of this text scores 112
    assert "eval perplexity" in proc.stdout
    rnn = rec["recurrent"]
    assert rnn["implementation"] == "keras-generic-loop" and "no GPU" in rnn["reason"]
    assert len(rnn["layers"]) == 2 and all(x["cudnn_eligible"] for x in rnn["layers"])
    # 200 steps x batch 20 over ~4,000 windows of 21 words: the epoch is in windows.
    assert 3000 < rec["examples_per_epoch"] < 4200


@pytest.mark.slow
def test_clipping_is_global_on_two_replicas(tmp_path):
    """Keras clips each replica's share; tpubench clips the summed gradient, like 1 replica."""
    common = ["--use_synthetic_data", "--batch_size=8", "--train_steps=3", "--seed=3"]
    common.append("--params=max_grad_norm=0.05")
    losses = []
    for n in (1, 2):
        proc, rec = run_cli(
            "train",
            "--model=ptb_lstm",
            "--tiny",
            f"--num_cpu_devices={n}",
            f"--model_dir={tmp_path / str(n)}",
            *common,
            results_dir=tmp_path / "runs",
        )
        assert proc.returncode == 0, proc.stderr
        losses.append(rec["results"]["final_loss"])
    assert losses[1] == pytest.approx(losses[0], rel=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize(
    "model, args, metric, bound",
    [
        ("imdb_bilstm", ["--train_steps=200"], "accuracy", 0.6),
        ("bilstm1024", ["--train_steps=200"], "accuracy", 0.6),
        (
            "lstm_textgen",
            ["--train_steps=200", "--eval_steps=20"],
            "perplexity",
            15.0,
        ),  # unigram: 24
        ("bert_base", ["--train_steps=300"], "mlm_accuracy", 0.3),  # most frequent word: 0.24
    ],
)
def test_small_models_learn_the_embedded_text(tmp_path, model, args, metric, bound):
    _, rec = _train(tmp_path, model, "--steps_per_loop=50", *args, timeout=900)
    value = rec["results"]["eval"][metric]
    spec = registry.get(model)
    assert model_api.reached(spec, value, bound), f"{model}: {metric} {value} vs {bound}"


@pytest.mark.parametrize("max_grad_norm", [5.0, 1000.0])  # the tutorial's 5 clips here
def test_ptb_lstm_reports_loss_per_word_and_steps_as_the_tutorial(max_grad_norm):
    """The loss is the mean word loss; the update is the tutorial's on the summed loss.

    Computed here without the runner: cross-entropy by hand from the logits,
    the tutorial's objective (sum over the window's words, mean over the
    batch), its global-norm clip and plain SGD at the learning rate.
    """
    import tensorflow as tf

    from tpubench.run import runner as runner_lib

    spec = registry.get("ptb_lstm")
    params = registry.resolve_params(
        spec, {"vocab_size": "50", "max_grad_norm": str(max_grad_norm)}, tiny=True
    )
    params.update(seed=0, per_replica_batch_size=4, global_batch_size=4)
    runner = runner_lib.Runner(spec, params, tf.distribute.OneDeviceStrategy("/cpu:0"))
    features, labels = runner.synthetic_inputs(3)
    model = runner.model
    before = [v.numpy() for v in model.trainable_variables]
    with tf.GradientTape() as tape:
        log_probs = tf.nn.log_softmax(tf.cast(model(features, training=True), tf.float64))
        word_loss = -tf.reduce_sum(log_probs * tf.one_hot(labels, 50, dtype=tf.float64), -1)
        summed = tf.reduce_mean(tf.reduce_sum(word_loss, axis=1))  # the tutorial's objective
    picked = np.take_along_axis(log_probs.numpy(), labels.numpy()[..., None], axis=-1)[..., 0]
    grads = [tf.convert_to_tensor(g) for g in tape.gradient(summed, model.trainable_variables)]
    norm = math.sqrt(sum(float(tf.reduce_sum(tf.cast(g, tf.float64) ** 2)) for g in grads))
    scale = min(1.0, max_grad_norm / norm)
    expected = [
        w - params["learning_rate"] * scale * g.numpy() for w, g in zip(before, grads, strict=True)
    ]
    per_word = float(np.mean(-picked))

    last, _ = runner.make_train_loop(lambda: (features, labels))(tf.constant(1, tf.int32))
    assert float(last) == pytest.approx(per_word, rel=1e-5)
    assert float(summed) == pytest.approx(per_word * params["num_steps"], rel=1e-5)
    assert (scale < 1.0) == (max_grad_norm == 5.0)  # both branches of the clip are exercised
    for w, want in zip(model.trainable_variables, expected, strict=True):
        np.testing.assert_allclose(w.numpy(), want, rtol=1e-4, atol=1e-6)
