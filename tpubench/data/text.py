"""Text as TFRecords of token ids: tokenizers, vocabularies, two layouts.

Every text dataset is prepared once into one of two layouts (both local or
gs://, both described by manifest.json with the vocabulary beside it):

* `token_sequences` (classification): one record per labelled text,
  `tokens` (int64 ids, any length) and `label`.  Models pad or truncate at
  read time, so one prepared copy serves every sequence length.
* `token_stream` (language models): a split's running text as chunks of
  `sequence_length` ids (`tokens`; the last chunk may be shorter).  Language
  models cut it into windows at read time (`text_pipeline`).

Word vocabularies start with four reserved ids, PAD 0, UNK 1, EOS 2 (end of
a line or paragraph) and MASK 3 (masked-language models), followed by words
by falling training-set frequency.  Character vocabularies are the sorted
characters of the corpus with nothing reserved (as in Keras's text
generation example).  `manifest.vocab_size` counts every id.
"""

from __future__ import annotations

import collections
import hashlib
import json
import re
import time
from collections.abc import Iterable, Sequence

import numpy as np

from tpubench.core import errors
from tpubench.data import manifest as manifest_lib
from tpubench.data import tfrecord

SEQUENCES = "token_sequences"
STREAM = "token_stream"
VOCAB_FILE = "vocab.json"
PAD, UNK, EOS, MASK = 0, 1, 2, 3
SPECIALS = ("<pad>", "<unk>", "<eos>", "<mask>")
DEFAULT_CHUNK = 16_384

# Lower-cased words (with an apostrophe suffix: "don't"), numbers, and every
# other non-space character as its own token (punctuation, operators).
_WORD = re.compile(r"[a-z0-9_]+(?:'[a-z]+)?|[^\sa-z0-9_]")


def words(text: str) -> list[str]:
    """Word-level tokens of TEXT (lower-cased)."""
    return _WORD.findall(text.lower())


def word_vocabulary(
    token_lists: Iterable[Sequence[str]], max_size: int | None = None, min_count: int = 1
) -> list[str]:
    """SPECIALS, then words by falling count (ties: first seen), at most MAX_SIZE ids."""
    counts: collections.Counter = collections.Counter()
    for tokens in token_lists:
        counts.update(tokens)
    for special in SPECIALS:
        counts.pop(special, None)
    ranked = [w for w, c in counts.most_common() if c >= min_count]
    if max_size is not None:
        ranked = ranked[: max(0, max_size - len(SPECIALS))]
    return [*SPECIALS, *ranked]


def char_vocabulary(texts: Iterable[str]) -> list[str]:
    """The sorted characters of TEXTS."""
    chars: set[str] = set()
    for t in texts:
        chars.update(t)
    return sorted(chars)


def encode(tokens: Iterable[str], vocabulary: Sequence[str]) -> np.ndarray:
    """Token ids (int64); tokens outside a word vocabulary become UNK."""
    index = {t: i for i, t in enumerate(vocabulary)}
    unk = UNK if tuple(vocabulary[: len(SPECIALS)]) == SPECIALS else None
    out = []
    for t in tokens:
        i = index.get(t, unk)
        if i is None:
            raise errors.DataError(f"token {t!r} is not in the character vocabulary")
        out.append(i)
    return np.asarray(out, dtype=np.int64)


def _tf():
    import tensorflow as tf

    return tf


def _record(tokens: np.ndarray, label: int | None = None) -> bytes:
    tf = _tf()
    feature = {"tokens": tf.train.Feature(int64_list=tf.train.Int64List(value=tokens.tolist()))}
    if label is not None:
        feature["label"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[int(label)]))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def _write_vocabulary(output_dir: str, vocabulary: Sequence[str], digest) -> None:
    tf = _tf()
    text = json.dumps(list(vocabulary), ensure_ascii=False)
    digest.update(text.encode())
    with tf.io.gfile.GFile(manifest_lib.join(output_dir, VOCAB_FILE), "w") as f:
        f.write(text)


def write_sequences(
    output_dir: str,
    name: str,
    splits: dict[str, tuple[Sequence[np.ndarray], Sequence[int]]],
    vocabulary: Sequence[str],
    labels: Sequence[str],
    source: str,
    started: float,
    num_shards: int = 4,
) -> manifest_lib.Manifest:
    """Writes labelled id sequences ({split: (ids per text, labels)}) and the manifest."""
    tf = _tf()
    tf.io.gfile.makedirs(output_dir)
    digest = hashlib.sha256()
    out, longest = {}, 0
    for split, (sequences, ys) in splits.items():
        records = [_record(s, y) for s, y in zip(sequences, ys, strict=True)]
        shards = num_shards if split == "train" else 1
        names, counts, size, sha = tfrecord.write_shards(output_dir, split, records, shards)
        digest.update(sha.encode())
        tokens = int(sum(len(s) for s in sequences))
        out[split] = manifest_lib.Split(
            len(records), names, size, file_examples=tuple(counts), tokens=tokens
        )
        longest = max([longest, *(len(s) for s in sequences)])
    _write_vocabulary(output_dir, vocabulary, digest)
    return _finish(
        output_dir,
        name,
        SEQUENCES,
        out,
        digest,
        source,
        started,
        vocabulary,
        longest,
        num_classes=len(labels),
        labels=tuple(labels),
    )


def write_stream(
    output_dir: str,
    name: str,
    splits: dict[str, np.ndarray],
    vocabulary: Sequence[str],
    source: str,
    started: float,
    chunk: int = DEFAULT_CHUNK,
    num_shards: int = 4,
) -> manifest_lib.Manifest:
    """Writes each split's running ids as CHUNK-long records, and the manifest."""
    tf = _tf()
    tf.io.gfile.makedirs(output_dir)
    digest = hashlib.sha256()
    out = {}
    for split, ids in splits.items():
        ids = np.asarray(ids, dtype=np.int64)
        records = [_record(ids[i : i + chunk]) for i in range(0, len(ids), chunk)]
        shards = max(1, min(num_shards if split == "train" else 1, len(records)))
        names, counts, size, sha = tfrecord.write_shards(output_dir, split, records, shards)
        digest.update(sha.encode())
        out[split] = manifest_lib.Split(
            len(records), names, size, file_examples=tuple(counts), tokens=len(ids)
        )
    _write_vocabulary(output_dir, vocabulary, digest)
    return _finish(
        output_dir, name, STREAM, out, digest, source, started, vocabulary, chunk, num_classes=0
    )


def _finish(
    output_dir, name, fmt, splits, digest, source, started, vocabulary, length, **kw
) -> manifest_lib.Manifest:
    manifest = manifest_lib.Manifest(
        name=name,
        format=fmt,
        image_shape=(),
        splits=splits,
        fingerprint="sha256:" + digest.hexdigest(),
        source=source,
        prepare_seconds=round(time.perf_counter() - started, 3),
        data_dir=output_dir,
        vocab_size=len(vocabulary),
        vocabulary=VOCAB_FILE,
        sequence_length=int(length),
        **kw,
    )
    manifest_lib.write(output_dir, manifest)
    return manifest


def stream_windows(manifest: manifest_lib.Manifest, split: str, length: int, stride: int) -> int:
    """How many LENGTH-token windows, STRIDE apart, a stream split yields.

    Windows never cross a chunk boundary (each record is windowed on its
    own), so this counts per chunk: every chunk is full but the last.
    """
    s = manifest.split(split)
    chunk = manifest.sequence_length
    full, rest = divmod(s.tokens, chunk) if chunk else (0, s.tokens)
    lengths = [chunk] * full + ([rest] if rest else [])

    def per_chunk(n: int) -> int:
        return 0 if n < length else (n - length) // stride + 1

    return sum(per_chunk(n) for n in lengths)


def require_format(manifest: manifest_lib.Manifest, fmt: str, model: str) -> None:
    """A model reading the wrong layout gets one clear line, not a parse error."""
    if manifest.format != fmt:
        raise errors.DataError(
            f"model {model!r} reads {fmt} records but {manifest.data_dir} holds "
            f"{manifest.name!r} in the {manifest.format} layout"
        )
