"""`tpubench data prepare/list/bench` through the real CLI: sources, layouts, counts."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import one_line_error, run_cli


def _manifest(path) -> dict:
    return json.loads((path / "manifest.json").read_text())


def _image_folder(root, per_class=6):
    """A class-per-folder tree of real JPEG and PNG files (crops of a sample photo)."""
    import tensorflow as tf
    from sklearn.datasets import load_sample_images

    photo = load_sample_images().images[0]
    written = {}
    for c, name in enumerate(("cat", "dog", "fox")):
        d = root / name
        d.mkdir(parents=True)
        for i in range(per_class):
            crop = np.ascontiguousarray(photo[10 * i : 10 * i + 60 + c, 20 * c : 20 * c + 80])
            if i % 3 == 0:
                data = tf.io.encode_png(crop).numpy()
                path = d / f"{i}.png"
            else:
                data = tf.io.encode_jpeg(crop).numpy()
                path = d / f"{i}.jpg"
            path.write_bytes(data)
            written[str(path)] = data
    (root / "cat" / "notes.txt").write_text("not an image")
    return written


def test_list_names_every_source():
    proc, _ = run_cli("data", "list", "--format=json")
    assert proc.returncode == 0, proc.stderr
    names = {row["dataset"] for row in json.loads(proc.stdout)}
    assert {"digits", "photos", "folder", "tfds:NAME"} <= names


def test_folder_prepare_keeps_jpeg_bytes_and_counts_every_image(tmp_path):
    import tensorflow as tf

    written = _image_folder(tmp_path / "images")
    out = tmp_path / "prepared"
    proc, _ = run_cli(
        "data", "prepare", "--dataset=folder", f"--source={tmp_path / 'images'}",
        f"--output={out}", "--validation_fraction=0.3", "--format=json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    m = _manifest(out)
    assert m["format"] == "jpeg_image" and m["num_classes"] == 3
    counts = {k: v["examples"] for k, v in m["splits"].items()}
    assert counts["train"] + counts["validation"] == len(written) == 18
    assert counts["validation"] > 0 and counts["train"] > 0
    assert report["examples"] == 18 and report["bytes"] == sum(
        (out / f).stat().st_size for s in m["splits"].values() for f in s["files"]
    )
    # JPEG files are stored byte for byte; PNGs are re-encoded as JPEG.
    stored = []
    for split in m["splits"].values():
        for f in split["files"]:
            for raw in tf.data.TFRecordDataset(str(out / f)).as_numpy_iterator():
                ex = tf.train.Example.FromString(raw)
                stored.append(ex.features.feature["image/encoded"].bytes_list.value[0])
    jpegs = {v for k, v in written.items() if k.endswith(".jpg")}
    assert jpegs <= set(stored)
    assert all(s[:3] == b"\xff\xd8\xff" for s in stored)
    # A second prepare to the same place is refused unless asked.
    again, _ = run_cli(
        "data", "prepare", "--dataset=folder", f"--source={tmp_path / 'images'}", f"--output={out}"
    )
    assert "--overwrite" in one_line_error(again)


def test_photos_jpeg_train_and_bench(tmp_path):
    out = tmp_path / "photos"
    proc, _ = run_cli("data", "prepare", "--dataset=photos", "--examples=96", f"--output={out}")
    assert proc.returncode == 0, proc.stderr
    assert "MB/s written" in proc.stdout
    m = _manifest(out)
    assert m["splits"]["train"]["examples"] == 96 and m["splits"]["validation"]["examples"] == 12
    assert sum(m["splits"]["train"]["file_examples"]) == 96

    bench, _ = run_cli(
        "data", "bench", f"--data_dir={out}", "--model=resnet50", "--tiny",
        "--batch_size=8", "--batches=6", "--warmup_batches=1", "--format=json",
    )  # fmt: skip
    assert bench.returncode == 0, bench.stderr
    b = json.loads(bench.stdout)
    assert b["examples"] == 6 * 8 and b["batches"] == 6
    assert b["examples_per_sec"] == pytest.approx(b["examples"] / b["seconds"], rel=1e-6)
    bytes_per_example = m["splits"]["train"]["bytes"] / 96
    assert b["mb_per_sec"] == pytest.approx(b["examples_per_sec"] * bytes_per_example / 1e6)

    results = tmp_path / "runs"
    train, record = run_cli(
        "train", "--model=resnet50", "--tiny", f"--data_dir={out}", "--batch_size=8",
        "--train_steps=3", results_dir=results,
    )  # fmt: skip
    assert train.returncode == 0, train.stderr
    assert record["status"] == "ok"
    assert record["data"]["format"] == "jpeg_image"
    assert record["data"]["fingerprint"] == m["fingerprint"]
    assert record["results"]["eval"]["examples"] == 12


_TFDS_BUILDER = textwrap.dedent(
    """
    import numpy as np
    import tensorflow_datasets as tfds
    from sklearn.datasets import load_digits

    class TinyDigits(tfds.core.GeneratorBasedBuilder):
        VERSION = tfds.core.Version("1.0.0")

        def _info(self):
            return self.dataset_info_from_configs(
                features=tfds.features.FeaturesDict({
                    "image": tfds.features.Image(shape=(8, 8, 1)),
                    "label": tfds.features.ClassLabel(num_classes=10),
                }),
            )

        def _split_generators(self, dl_manager):
            d = load_digits()
            x = (d.images * 15).astype(np.uint8)[..., None]
            return {"train": self._generate_examples(x[:100], d.target[:100]),
                    "test": self._generate_examples(x[100:130], d.target[100:130])}

        def _generate_examples(self, x, y):
            for i, (img, lab) in enumerate(zip(x, y)):
                yield i, {"image": img, "label": int(lab)}

    def build(data_dir):
        TinyDigits(data_dir=data_dir).download_and_prepare()
    """
)


def test_tfds_dataset_read_from_its_data_dir(tmp_path, gcs_env):
    """A prepared TFDS data_dir is read directly, without the builder's code, from
    local disk and from gs://."""
    package = tmp_path / "code" / "tiny_digits_ds"  # TFDS wants builder code in a package
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(_TFDS_BUILDER)
    tfds_dir = tmp_path / "tfds"
    build = f"import sys; sys.path.insert(0, {str(package.parent)!r}); import tiny_digits_ds; "
    build += f"tiny_digits_ds.build({str(tfds_dir)!r})"
    subprocess.run([sys.executable, "-c", build], check=True, capture_output=True)
    out = tmp_path / "prepared"
    proc, _ = run_cli(
        "data", "prepare", "--dataset=tfds:tiny_digits", f"--source={tfds_dir}", f"--output={out}"
    )
    assert proc.returncode == 0, proc.stderr
    m = _manifest(out)
    assert m["format"] == "raw_image" and m["image_shape"] == [8, 8, 1]
    assert m["splits"]["train"]["examples"] == 100
    assert m["splits"]["validation"]["examples"] == 30  # TFDS "test" serves as validation
    assert m["num_classes"] == 10

    from tpubench.storage import gcs

    for path in tfds_dir.rglob("*"):
        if path.is_file():
            gcs.upload_file(str(path), f"gs://tpubench-test/tfds/{path.relative_to(tfds_dir)}")
    out_gcs = tmp_path / "prepared-from-gcs"
    proc, _ = run_cli(
        "data", "prepare", "--dataset=tfds:tiny_digits", "--source=gs://tpubench-test/tfds",
        f"--output={out_gcs}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert _manifest(out_gcs)["fingerprint"] == m["fingerprint"]


def test_prepare_errors_are_one_line(tmp_path):
    proc, _ = run_cli("data", "prepare", "--dataset=photoz", f"--output={tmp_path / 'x'}")
    line = one_line_error(proc)
    assert "'photoz'" in line and "photos" in line and proc.returncode == 2
    proc, _ = run_cli(
        "data", "prepare", "--dataset=folder", f"--source={tmp_path / 'nope'}",
        f"--output={tmp_path / 'y'}",
    )  # fmt: skip
    assert "is not a directory" in one_line_error(proc) and proc.returncode == 3
    proc, _ = run_cli("data", "bench", f"--data_dir={tmp_path / 'absent'}")
    assert "does not exist" in one_line_error(proc) and proc.returncode == 2  # a usage error
    proc, _ = run_cli("data", "frobnicate")
    assert "unknown data action 'frobnicate'" in one_line_error(proc)


def test_text_datasets_prepare_through_the_same_command(tmp_path):
    out = tmp_path / "topics"
    proc, _ = run_cli("data", "prepare", "--dataset=pydoc_topics", f"--output={out}")
    assert proc.returncode == 0, proc.stderr
    m = _manifest(out)
    assert m["format"] == "token_sequences"
    counts = {k: v["examples"] for k, v in m["splits"].items()}
    assert f"{counts['train']:>9,} examples" in proc.stdout
    offline, _ = run_cli("data", "prepare", "--dataset=ptb", f"--output={tmp_path / 'ptb'}")
    assert "--source=" in one_line_error(offline) and offline.returncode == 3
