"""Fast in-process checks of the pure pieces: timing, params, records, MFU, data."""

from __future__ import annotations

import json
import math
import os
import stat

import numpy as np
import pytest
from conftest import run_cli

from tpubench.cli import values
from tpubench.core import errors, timing
from tpubench.core.timing import LoopTime
from tpubench.hardware import mfu
from tpubench.model import flops as flops_lib
from tpubench.model import model_info, registry
from tpubench.storage import records, redaction

# ------------------------------------------------------------------ timing


@pytest.mark.parametrize("n", [1, 2, 5, 17, 100])
def test_percentile_matches_numpy(n):
    values = list(np.random.default_rng(n).exponential(size=n))
    for q in (0, 1, 25, 50, 90, 99, 100):
        assert timing.percentile(values, q) == pytest.approx(np.percentile(values, q))


def test_percentile_of_nothing_is_nan():
    assert math.isnan(timing.percentile([], 50))


def test_steady_state_starts_after_the_warm_up_transient():
    # 40 loops, chunks of 4: the first two chunks are 5x slower.
    assert timing.steady_state_start([5.0] * 8 + [1.0] * 32) == 8
    # A transient that ends mid-chunk: the first chunk whose median has settled.
    start = timing.steady_state_start([9.0, 7.0, 5.0, 3.0, 2.0, 1.5] + [1.0] * 34)
    assert 4 <= start <= 8


def test_steady_state_of_a_flat_or_short_run_is_zero():
    assert timing.steady_state_start([1.0] * 50) == 0
    assert timing.steady_state_start([1.0, 1.05, 0.97, 1.02, 0.99] * 6) == 0
    assert timing.steady_state_start([5.0, 1.0, 1.0]) == 0  # too short to tell


def test_summarize_excludes_warm_up_loops():
    loops = [LoopTime(10, 5.0, 1280)] + [LoopTime(10, 1.0, 1280)] * 4
    s = timing.summarize(loops, warmup_loops=1, num_replicas=2)
    assert s["examples_per_sec"] == pytest.approx(4 * 1280 / 4.0)
    assert s["examples_per_sec_per_replica"] == pytest.approx(640.0)
    assert s["measured_steps"] == 40 and s["measured_seconds"] == pytest.approx(4.0)
    assert s["step_time_p50"] == s["step_time_p90"] == s["step_time_p99"] == pytest.approx(0.1)
    assert s["step_time_mean"] == pytest.approx(0.1)
    assert s["warmup_loops"] == 1 and s["warmup_seconds"] == 5.0
    assert s["time_to_first_loop"] == 5.0
    assert s["steady_state_after_loops"] == 1
    assert s["compile_seconds"] == pytest.approx(5.0 - 10 * 0.1)
    assert s["step_time_samples"] == 4


def test_one_timed_loop_says_n_is_1():
    from tpubench.cli import report_text

    s = timing.summarize([LoopTime(10, 5.0, 1280), LoopTime(10, 0.3263, 1280)], 1, 1)
    assert s["step_time_samples"] == 1
    record = {"model": {"name": "m"}, "results": s, "config": {"steps_per_loop": 10}}
    text = report_text.train_summary(record)
    assert "32.63 / 32.63 / 32.63 ms" in text and "n=1: one timed loop" in text


def test_summarize_skips_a_slow_start_after_warm_up():
    # After the warm-up loop, two loops still run at a third of the speed.
    loops = [LoopTime(10, 9.0, 100)] + [LoopTime(10, 3.0, 100)] * 2 + [LoopTime(10, 1.0, 100)] * 8
    s = timing.summarize(loops, warmup_loops=1, num_replicas=1)
    assert s["steady_state_after_loops"] == 3
    assert s["examples_per_sec"] == pytest.approx(800 / 8.0)
    assert s["measured_steps"] == 80


def test_summarize_with_more_warm_up_loops():
    loops = [LoopTime(5, 2.0, 50), LoopTime(5, 1.0, 50)] + [LoopTime(5, 0.5, 50)] * 4
    s = timing.summarize(loops, warmup_loops=2, num_replicas=1)
    assert s["warmup_loops"] == 2 and s["warmup_seconds"] == 3.0
    assert s["examples_per_sec"] == pytest.approx(200 / 2.0)


def test_summarize_when_only_warm_up_ran():
    s = timing.summarize([LoopTime(10, 5.0, 1280)], warmup_loops=1, num_replicas=1)
    assert s["examples_per_sec"] is None
    assert s["measured_steps"] == 0
    assert "warm-up" in s["note"] and "--train_steps" in s["note"]


# --------------------------------------------------------------- registry


@pytest.fixture(scope="module")
def specs():
    return {name: registry.get(name) for name in ("mnist_mlp", "resnet50")}


def test_params_are_coerced_to_the_default_type(specs):
    p = registry.resolve_params(
        specs["mnist_mlp"], {"hidden_units": "64", "dropout": "0.5", "learning_rate": "1"}
    )
    assert p["hidden_units"] == 64 and isinstance(p["hidden_units"], int)
    assert p["dropout"] == 0.5
    assert p["learning_rate"] == 1.0 and isinstance(p["learning_rate"], float)
    r = registry.resolve_params(specs["resnet50"], {"blocks": "1:1:1:1", "sync_batch_norm": "true"})
    assert r["blocks"] == (1, 1, 1, 1)
    assert r["sync_batch_norm"] is True
    for raw, expected in (("yes", True), ("1", True), ("False", False), ("0", False)):
        got = registry.resolve_params(specs["resnet50"], {"sync_batch_norm": raw})
        assert got["sync_batch_norm"] is expected


def test_tiny_variant_then_overrides(specs):
    spec = specs["mnist_mlp"]
    assert registry.resolve_params(spec, {}, tiny=True)["hidden_units"] == 32
    assert registry.resolve_params(spec, {"hidden_units": "8"}, tiny=True)["hidden_units"] == 8
    assert registry.resolve_params(spec, {})["hidden_units"] == 512, "defaults stay untouched"


@pytest.mark.parametrize(
    "model,overrides,needles",
    [
        ("mnist_mlp", {"dropuot": "0.1"}, ["dropuot", "did you mean dropout"]),
        ("mnist_mlp", {"hidden_units": "1.5"}, ["hidden_units", "1.5", "int"]),
        ("mnist_mlp", {"dropout": "lots"}, ["dropout", "lots", "float"]),
        ("resnet50", {"sync_batch_norm": "maybe"}, ["sync_batch_norm", "maybe", "bool"]),
        ("resnet50", {"blocks": "3:x"}, ["blocks", "3:x"]),
    ],
)
def test_bad_params_name_the_value(specs, model, overrides, needles):
    with pytest.raises(errors.UsageError) as e:
        registry.resolve_params(specs[model], overrides)
    for needle in needles:
        assert needle in str(e.value)


def test_unknown_model_lists_the_registered_ones():
    with pytest.raises(errors.UsageError) as e:
        registry.get("resnet5O")
    assert "resnet5O" in str(e.value) and "resnet50" in str(e.value)


def test_parse_params():
    assert values.parse_params(["a=1", " b = 2 ", "c=x=y", "d="]) == (
        ("a", "1"),
        ("b", "2"),
        ("c", "x=y"),
        ("d", ""),
    )
    for bad in ("dropout", "=1", " =1"):
        with pytest.raises(errors.UsageError) as e:
            values.parse_params([bad])
        assert repr(bad) in str(e.value)


# ---------------------------------------------------------------- records


def test_redaction_of_credential_looking_flags():
    argv = ["tpubench", "train", "--api_key=abc", "--model=x", "--gcs_token=zz", "--Password=p"]
    assert redaction.redact_argv(argv) == [
        "tpubench",
        "train",
        "--api_key=<redacted>",
        "--model=x",
        "--gcs_token=<redacted>",
        "--Password=<redacted>",
    ]
    values = {"private_key": "k", "model": "m", "batch_size": 8, "secret_path": None}
    assert redaction.redact_flags(values) == {
        "private_key": "<redacted>",
        "model": "m",
        "batch_size": 8,
        "secret_path": "<redacted>",
    }


def test_record_round_trip(tmp_path):
    record = {
        "schema_version": records.SCHEMA_VERSION,
        "run_id": records.new_run_id("mnist_mlp"),
        "status": "ok",
        "params": {"blocks": (1, 2), "rate": np.float32(0.5)},
    }
    path = records.write(record, str(tmp_path / "runs"))
    assert path == str(tmp_path / "runs" / f"{record['run_id']}.json")
    back = records.read(path)
    assert back["params"] == {"blocks": [1, 2], "rate": 0.5}
    assert back["run_id"] == record["run_id"]
    assert os.listdir(tmp_path / "runs") == [f"{record['run_id']}.json"], "no temp file left"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~umask, "records are for sharing"


def test_run_ids_name_the_model_and_differ():
    a, b = records.new_run_id("resnet50"), records.new_run_id("resnet50")
    assert "resnet50" in a and a != b


@pytest.mark.parametrize(
    "text,needle",
    [
        ("{not json", "invalid JSON"),
        ("[1, 2]", "not a tpubench run record"),
        ('{"status": "ok"}', "not a tpubench run record"),
        ('{"schema_version": 99, "run_id": "x"}', "schema_version 99"),
    ],
)
def test_reading_a_bad_record(tmp_path, text, needle):
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(errors.UsageError) as e:
        records.read(str(path))
    assert needle in str(e.value) and str(path) in str(e.value)


def test_reading_a_missing_record(tmp_path):
    with pytest.raises(errors.UsageError) as e:
        records.read(str(tmp_path / "gone.json"))
    assert "gone.json" in str(e.value)


# -------------------------------------------------------------------- MFU


@pytest.mark.parametrize(
    "name,key",
    [
        ("Tesla V100-SXM2-16GB", "v100"),
        ("NVIDIA A100-SXM4-40GB", "a100"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("Tesla T4", "t4"),
        ("NVIDIA L4", "l4"),
        ("Tesla P100-PCIE-16GB", "p100"),
        ("TPU v4", "tpu-v4"),
        ("TPU v5e", "tpu-v5e"),
        ("gcp:n1-standard-8+4xgcp:v100", "v100"),
        ("Intel(R) Xeon(R) CPU @ 2.20GHz", None),
    ],
)
def test_accelerator_key(name, key):
    assert mfu.accelerator_key(name) == key


def test_mfu_is_achieved_over_peak():
    assert mfu.mfu(3e6, 1000.0, 1e12) == pytest.approx(3e-3)
    assert mfu.peak_flops("v100", "fp16") == 125e12
    assert mfu.peak_flops("tpu-v4", "fp16") is None
    for args in ((None, 1000.0, 1e12), (3e6, None, 1e12), (3e6, 1000.0, None), (3e6, 0.0, 1e12)):
        assert mfu.mfu(*args) is None


def test_mnist_mlp_flops_match_the_layer_arithmetic():
    spec = registry.get("mnist_mlp")
    params = registry.resolve_params(spec, {})
    counted = flops_lib.count_flops(spec, params)
    w1, w2, w3 = 784 * 512, 512 * 512, 512 * 10
    # Multiply-adds of the three matmuls; bias adds, ReLUs and the softmax
    # loss add about 0.1% on top, so 1% bounds the counter's error.
    forward = 2 * (w1 + w2 + w3)
    assert counted["forward_flops_per_example"] == pytest.approx(forward, rel=0.01)
    # Backward: weight gradients for every layer (2x forward) plus input
    # gradients for all but the first layer (the image needs none).
    train = forward + 2 * (w1 + w2 + w3) + 2 * (w2 + w3)
    assert counted["train_flops_per_example"] == pytest.approx(train, rel=0.01)
    assert counted["parameters"] == 669_706


_LISTED = ("mnist_mlp", "cifar10_cnn", "resnet50", "imdb_fasttext")


def test_models_listing_gives_published_parameter_counts():
    proc, _ = run_cli("models", *_LISTED, "--format=json", timeout=600)
    assert proc.returncode == 0, proc.stderr
    rows = {row["name"]: row for row in json.loads(proc.stdout)}
    assert set(rows) == set(_LISTED)
    _check_listing(rows)


@pytest.mark.slow
def test_models_listing_covers_every_model():
    """Counts FLOPs of every full-size model (BERT-base, unrolled LSTMs): minutes."""
    proc, _ = run_cli("models", "--format=json", timeout=1200)
    assert proc.returncode == 0, proc.stderr
    rows = {row["name"]: row for row in json.loads(proc.stdout)}
    assert set(rows) == set(registry.names())
    _check_listing(rows)


@pytest.mark.parametrize("width", [80, 120])
def test_models_table_fits_the_terminal(width):
    """Every registered model's datasets and description, at the largest numbers listed."""
    rows = []
    for name in registry.names():
        spec = registry.get(name)
        rows.append(
            {
                "name": name,
                "description": spec.description,
                "parameters": 138_357_544,
                "forward_flops_per_example": 31.1677e9,
                "train_flops_per_example": 93.07e9,
                "default_batch_size": 512,
                "datasets": list(spec.datasets),
            }
        )
    text = model_info.table_text(rows, width)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width
    words = set(text.replace(",", " ").split())
    for r in rows:  # no dataset name is cut, every description word is there
        assert set(r["datasets"]) <= words, r["name"]
        assert set(r["description"].replace(",", " ").split()) <= words, r["name"]
    assert lines[0].split()[:2] == ["model", "parameters"]
    assert ("description" in lines[0]) == (width >= 110)


def _check_listing(rows):
    assert rows["mnist_mlp"]["parameters"] == 669_706  # Keras mnist_mlp.py example
    assert rows["cifar10_cnn"]["parameters"] == 1_250_858  # Keras cifar10_cnn.py example
    assert rows["resnet50"]["parameters"] == 25_557_032  # the published ResNet-50 count
    # ResNet-50 v1.5 is about 4.1 G multiply-adds per 224x224 image.
    assert 7.6e9 < rows["resnet50"]["forward_flops_per_example"] < 8.8e9
    # A training step is a forward and a backward pass of about twice its cost;
    # an embedding bag (imdb_fasttext) has no matmul behind its lookup, so less.
    for row in rows.values():
        low = 1.4 if row["name"] == "imdb_fasttext" else 2
        assert low < row["train_flops_per_example"] / row["forward_flops_per_example"] < 3.5
    assert rows["mnist_mlp"]["datasets"] == ["mnist", "digits"]


# ---------------------------------------------------------------- digits


@pytest.fixture(scope="module")
def digit_arrays():
    from tpubench.data import digits

    return digits.load_arrays()


def test_digits_arrays_have_mnist_shape_and_a_stratified_split(digit_arrays):
    x_tr, y_tr = digit_arrays["train"]
    x_te, y_te = digit_arrays["test"]
    assert x_tr.shape == (1437, 28, 28, 1) and x_te.shape == (360, 28, 28, 1)
    assert x_tr.dtype == np.uint8 and x_te.dtype == np.uint8
    assert set(y_tr) == set(y_te) == set(range(10))
    assert x_tr.max() > 200, "grey levels are scaled to 0..255"
    assert not x_tr[:, :4].any() and not x_tr[:, -4:].any(), "a 4-pixel empty frame, as MNIST"
    # Stratified 80/20: each class's test share is 20% up to rounding.
    for c in range(10):
        n_tr, n_te = int((y_tr == c).sum()), int((y_te == c).sum())
        assert abs(n_te - 0.2 * (n_tr + n_te)) <= 1


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    from tpubench.data import digits

    out = tmp_path_factory.mktemp("digits")
    return out, digits.prepare(str(out))


def test_digits_prepare_writes_manifest_and_shards(prepared):
    from tpubench.data import manifest as manifest_lib

    out, written = prepared
    m = manifest_lib.read(str(out))
    assert m.name == "digits" and m.num_classes == 10 and m.image_shape == (28, 28, 1)
    assert m.split("train").examples == 1437 and m.split("test").examples == 360
    assert m.eval_split() == "test"
    assert m.fingerprint == written.fingerprint and m.fingerprint.startswith("sha256:")
    for split in ("train", "test"):
        files = m.split(split).files
        assert files and all((out / f).exists() for f in files)
        assert m.split(split).bytes == sum((out / f).stat().st_size for f in files)
    with pytest.raises(errors.DataError) as e:
        m.split("validation")
    assert "validation" in str(e.value)


def _pipeline_params(data_dir, batch):
    return {
        "per_replica_batch_size": batch,
        "data_dir": data_dir,
        "seed": 1,
        "deterministic": True,
        "cache": False,
        "fixed_eval_steps": False,
    }


def _as_uint8(images):
    return np.rint(np.asarray(images) * 255.0).astype(np.uint8)


def test_digits_train_pipeline_reads_one_epoch_exactly(prepared, digit_arrays):
    from tpubench.model.model_api import Mode

    out, _ = prepared
    spec = registry.get("mnist_mlp")
    batch = 479  # 1437 = 3 x 479: three batches are exactly one epoch
    ds = spec.input_fn(_pipeline_params(str(out), batch), None, Mode.TRAIN)
    seen_x, seen_y = [], []
    for x, y in ds.take(1437 // batch):
        assert x.shape == (batch, 28, 28, 1) and x.dtype.name == "float32"
        seen_x.append(_as_uint8(x))
        seen_y.append(np.asarray(y))
    seen_x, seen_y = np.concatenate(seen_x), np.concatenate(seen_y)
    x_tr, y_tr = digit_arrays["train"]

    def keyed(xs, ys):
        return sorted(zip((a.tobytes() for a in xs), ys.tolist(), strict=True))

    # Every training example exactly once (the epoch is shuffled, not sampled).
    assert keyed(seen_x, seen_y) == keyed(x_tr, y_tr)
    assert not np.array_equal(seen_y, y_tr), "the epoch is shuffled"


def test_digits_eval_pipeline_covers_the_test_split(prepared, digit_arrays):
    from tpubench.model.model_api import Mode

    out, _ = prepared
    spec = registry.get("mnist_mlp")
    ds = spec.input_fn(_pipeline_params(str(out), 100), None, Mode.EVAL)
    sizes = [int(y.shape[0]) for _, y in ds]
    assert sizes == [100, 100, 100, 60], "eval keeps the last partial batch"
    labels = np.concatenate([np.asarray(y) for _, y in ds])
    assert sorted(labels.tolist()) == sorted(digit_arrays["test"][1].tolist())


def test_parameter_server_runs_are_counted_in_workers():
    from tpubench.cli import report_text

    results = {"examples_per_sec": 9448.2, "examples_per_sec_per_replica": 4724.1}
    record = {
        "model": {"name": "m"},
        "results": results,
        "placement": {"strategy": "parameter_server", "num_workers": 2, "num_replicas": 1},
    }
    text = report_text.train_summary(record)
    assert "2 worker(s)" in text and "1 replica(s)" not in text
    assert "9,448.2  (per worker 4,724.1)" in text
