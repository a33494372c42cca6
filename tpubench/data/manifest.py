"""manifest.json: what a prepared data directory holds.

Every prepared directory (local or gs://) has one.  Runs read it to find the
shards of a split, the example counts ($/epoch needs them), shapes and the
fingerprint that goes into the run record.
"""

from __future__ import annotations

import dataclasses
import json
import os

from tpubench.core import errors
from tpubench.storage import any_path

MANIFEST = "manifest.json"
FORMAT_VERSION = 1
MAX_MANIFEST_BYTES = 32 << 20  # file lists of every split; far past any real manifest
SHARD_WHAT = "a TFRecord shard of `tpubench data prepare`; prepare the data_dir again"


@dataclasses.dataclass(frozen=True)
class Split:
    examples: int
    files: tuple[str, ...]
    bytes: int = 0
    file_examples: tuple[int, ...] = ()  # examples per file, in `files` order
    tokens: int = 0  # text layouts: token ids in the split


@dataclasses.dataclass(frozen=True)
class Manifest:
    name: str
    format: str  # raw_image | jpeg_image | token_sequences | token_stream (data/text.py)
    image_shape: tuple[int, ...]
    num_classes: int
    splits: dict[str, Split]
    fingerprint: str
    source: str = ""
    prepare_seconds: float | None = None
    data_dir: str = ""
    # Text layouts: ids run 0..vocab_size-1, the vocabulary file lies beside
    # the manifest, sequence_length is the longest sequence or the stream's
    # chunk length, labels name the classes.
    vocab_size: int = 0
    vocabulary: str = ""
    sequence_length: int = 0
    labels: tuple[str, ...] = ()

    def split(self, name: str) -> Split:
        if name not in self.splits:
            raise errors.DataError(
                f"dataset {self.name!r} in {self.data_dir} has no split {name!r}; "
                f"it has: {', '.join(sorted(self.splits))}"
            )
        return self.splits[name]

    def eval_split(self) -> str:
        for name in ("validation", "test", "eval"):
            if name in self.splits:
                return name
        raise errors.DataError(f"dataset {self.name!r} in {self.data_dir} has no eval split")

    def fitted_params(self) -> dict:
        """Hyperparameters a model should take from its data (head size, vocabulary)."""
        out = {}
        if self.num_classes:
            out["num_classes"] = self.num_classes
        if self.vocab_size:
            out["vocab_size"] = self.vocab_size
        return out

    def image_fit(self, params: dict) -> dict:
        """How images of this data are fitted to a model whose params name an image_size."""
        size = params.get("image_size")
        shape = tuple(self.image_shape or ())
        if not size or len(shape) < 2 or tuple(shape[:2]) == (size, size):
            return {}
        got = "x".join(str(d) for d in shape)
        return {"images": f"{got} resized to {size}x{size} (the model's input size)"}

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["format_version"] = FORMAT_VERSION
        d.pop("data_dir")
        return d

    def identity(self) -> dict:
        """What a run record says about its data."""
        out = {
            "name": self.name,
            "data_dir": self.data_dir,
            "format": self.format,
            "fingerprint": self.fingerprint,
            "splits": {
                k: {"examples": v.examples, "files": len(v.files), "bytes": v.bytes}
                | ({"tokens": v.tokens} if v.tokens else {})
                for k, v in self.splits.items()
            },
        }
        if self.vocab_size:
            out["vocab_size"] = self.vocab_size
        return out


def join(base: str, name: str) -> str:
    return base.rstrip("/") + "/" + name


def shard_paths(data_dir: str, files) -> list[str]:
    """FILES (a split's shards) as paths in DATA_DIR, each local one a regular file.

    TensorFlow's TFRecord reader would wait on a FIFO for ever and read
    /dev/zero without end; a shard is checked here, before it reads.

    Raises:
      UsageError: a shard that is a FIFO, a device or a directory (one line).
    """
    paths = [join(data_dir, f) for f in files]
    for path in paths:
        any_path.check_regular(path, SHARD_WHAT)
    return paths


def _missing(data_dir: str) -> errors.DataError:
    return errors.DataError(
        f"--data_dir={data_dir} does not exist (expected a directory prepared by "
        "`tpubench data prepare`, holding manifest.json and TFRecord shards)"
    )


def check_local(data_dir: str | None) -> None:
    """The missing-directory error for a local DATA_DIR, before TensorFlow loads (gs:// later):
    a usage error, refused in one line with no record (the flag names nothing there)."""
    if data_dir and "://" not in data_dir and not os.path.exists(data_dir):
        raise errors.UsageError(str(_missing(data_dir)))


def read(data_dir: str) -> Manifest:
    """Reads DATA_DIR/manifest.json (local or gs://) with clear errors."""
    import tensorflow as tf

    path = join(data_dir, MANIFEST)
    try:
        if not tf.io.gfile.exists(data_dir):
            raise _missing(data_dir)
        if not tf.io.gfile.exists(path):
            raise errors.DataError(
                f"--data_dir={data_dir} has no {MANIFEST}; prepare it with `tpubench data prepare`"
            )
        # A regular file of bounded size: a FIFO or device there would hang or never end.
        what = f"the {MANIFEST} of `tpubench data prepare`"
        raw = json.loads(any_path.read_text(path, MAX_MANIFEST_BYTES, what))
    except tf.errors.OpError as e:
        raise errors.DataError(f"cannot read {path}: {e.message.splitlines()[0]}") from None
    except json.JSONDecodeError as e:
        raise errors.DataError(f"{path} is not valid JSON ({e.msg}, line {e.lineno})") from None
    try:
        splits = {
            k: Split(
                int(v["examples"]),
                tuple(v["files"]),
                int(v.get("bytes", 0)),
                tuple(int(n) for n in v.get("file_examples", ())),
                int(v.get("tokens", 0)),
            )
            for k, v in raw["splits"].items()
        }
        return Manifest(
            name=raw["name"],
            format=raw["format"],
            image_shape=tuple(raw["image_shape"]),
            num_classes=int(raw["num_classes"]),
            splits=splits,
            fingerprint=raw["fingerprint"],
            source=raw.get("source", ""),
            prepare_seconds=raw.get("prepare_seconds"),
            data_dir=data_dir,
            vocab_size=int(raw.get("vocab_size", 0)),
            vocabulary=raw.get("vocabulary", ""),
            sequence_length=int(raw.get("sequence_length", 0)),
            labels=tuple(raw.get("labels", ())),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise errors.DataError(f"{path} is malformed: missing or bad field {e}") from None


def to_json(manifest: Manifest) -> str:
    return json.dumps(manifest.to_dict(), indent=2, sort_keys=True) + "\n"


def write(data_dir: str, manifest: Manifest) -> None:
    import tensorflow as tf

    with tf.io.gfile.GFile(join(data_dir, MANIFEST), "w") as f:
        f.write(to_json(manifest))
