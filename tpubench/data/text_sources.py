"""Preparers for the text datasets the studies used, and the embedded ones.

Each preparer is `prepare(output_dir, source) -> Manifest`; SOURCE is what
the user supplies (a directory, an archive, a text file), or None to fetch
the public copy.  Without a network, fetching fails with one line saying
where to get the files and how to pass them.  `PREPARERS` maps dataset
names to preparers (`tpubench data prepare --dataset=NAME`).

* imdb: the Large Movie Review Dataset (25,000 train / 25,000 test reviews,
  positive or negative).  SOURCE: the `aclImdb` directory or
  `aclImdb_v1.tar.gz`; None: TFDS `imdb_reviews` (needs
  tensorflow-datasets and a network).  Keras's 20,000-id vocabulary.
* ptb: Penn Treebank as Mikolov's `simple-examples` ships it
  (ptb.train/valid/test.txt, 10,000 words, EOS per line).  SOURCE: the
  directory holding the three files, or `simple-examples.tgz`.
* nietzsche: the text Keras's LSTM text-generation example reads,
  lower-cased, character by character, last 10% as test text.  SOURCE: the
  .txt file.
* text_words / text_chars: any plain text (a .txt file or a directory of
  them; last 10% as test text) as words (up to 30,522 ids, BERT-base's
  vocabulary size) or lower-cased characters.  SOURCE is required.
"""

from __future__ import annotations

import contextlib
import os
import tarfile
import tempfile
import time
import urllib.error
import urllib.request

import numpy as np

from tpubench.core import errors, safe_files
from tpubench.data import pydoc_corpus, text
from tpubench.storage import cache as cache_lib

MAX_TEXT_BYTES = 1 << 30  # one text file of a corpus (Nietzsche: 600 KB; PTB's train: 5 MB)
IMDB_URL = "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"
PTB_URL = "http://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz"
NIETZSCHE_URL = "https://s3.amazonaws.com/text-datasets/nietzsche.txt"
IMDB_VOCAB = 20_000
TEXT_VOCAB = 30_522


def fetch(url: str, how: str) -> str:
    """Downloads URL into the cache (once); offline, one line naming HOW to supply it."""
    target = cache_lib.path("downloads", os.path.basename(url))
    if os.path.exists(target):
        return target
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = f"{target}.{os.getpid()}.part"
    try:
        with urllib.request.urlopen(url, timeout=30) as response, open(tmp, "wb") as out:
            while chunk := response.read(1 << 20):
                out.write(chunk)
        os.replace(tmp, target)
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise errors.DataError(f"cannot download {url} ({reason}); {how}") from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return target


def _read(path: str) -> str:
    """A text file of --source (or in it): a regular file, at most MAX_TEXT_BYTES."""
    try:
        data = safe_files.read_bytes(path, "--source", MAX_TEXT_BYTES, "a text file")
    except safe_files.Unreadable as e:
        raise errors.DataError(f"--source={path}: {e.error.strerror or e}") from None
    return data.decode("utf-8", errors="replace")


@contextlib.contextmanager
def _archive(path: str):
    """The tar archive PATH (--source), opened once it is known to be a regular file."""
    what = "a .tar.gz or .tgz archive"
    with safe_files.open_regular(path, "--source", None, what) as f, tarfile.open(fileobj=f) as tar:
        yield tar


def _need(path: str, what: str) -> None:
    if not os.path.exists(path):
        raise errors.DataError(f"--source={path} does not exist (expected {what})")


# ------------------------------------------------------------------ IMDb
def _imdb_from_dir(root: str) -> dict[str, tuple[list[str], list[int]]]:
    if os.path.isdir(os.path.join(root, "aclImdb")):
        root = os.path.join(root, "aclImdb")
    out = {}
    for split in ("train", "test"):
        texts, labels = [], []
        for label, name in ((0, "neg"), (1, "pos")):
            folder = os.path.join(root, split, name)
            if not os.path.isdir(folder):
                raise errors.DataError(
                    f"--source={root} has no {split}/{name} folder (expected the aclImdb "
                    f"directory of {IMDB_URL}, or the .tar.gz itself)"
                )
            for f in sorted(os.listdir(folder)):
                texts.append(_read(os.path.join(folder, f)))
                labels.append(label)
        out[split] = (texts, labels)
    return out


def _imdb_from_tfds() -> dict[str, tuple[list[str], list[int]]]:
    how = f"download {IMDB_URL}, unpack it and pass --source=PATH/aclImdb"
    try:
        import tensorflow_datasets as tfds
    except ImportError:
        raise errors.DataError(
            f"imdb without --source needs tensorflow-datasets (pip install tensorflow-datasets); "
            f"or {how}"
        ) from None
    try:
        out = {}
        for split in ("train", "test"):
            rows = tfds.as_numpy(tfds.load("imdb_reviews", split=split, as_supervised=True))
            pairs = [(t.decode("utf-8", "replace"), int(y)) for t, y in rows]
            out[split] = ([t for t, _ in pairs], [y for _, y in pairs])
        return out
    except Exception as e:  # noqa: BLE001 - TFDS raises many kinds when offline
        first = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
        raise errors.DataError(f"TFDS imdb_reviews failed ({first}); {how}") from None


def prepare_imdb(output_dir: str, source: str | None = None):
    """IMDb movie reviews, positive or negative (--source=aclImdb dir or .tar.gz; else TFDS)."""
    start = time.perf_counter()
    if source is None:
        raw = _imdb_from_tfds()
    else:
        _need(source, "the aclImdb directory or aclImdb_v1.tar.gz")
        if os.path.isfile(source):
            with tempfile.TemporaryDirectory() as unpacked, _archive(source) as tar:
                tar.extractall(unpacked, filter="data")
                raw = _imdb_from_dir(unpacked)
        else:
            raw = _imdb_from_dir(source)

    def tokens(review: str) -> list[str]:
        return text.words(review.replace("<br />", " "))

    train_tokens = [tokens(t) for t in raw["train"][0]]
    vocab = text.word_vocabulary(train_tokens, max_size=IMDB_VOCAB)
    splits = {
        "train": ([text.encode(t, vocab) for t in train_tokens], raw["train"][1]),
        "test": ([text.encode(tokens(t), vocab) for t in raw["test"][0]], raw["test"][1]),
    }
    return text.write_sequences(
        output_dir, "imdb", splits, vocab, ("neg", "pos"), "IMDb (aclImdb v1)", start, 8
    )


# ------------------------------------------------------------------- PTB
def prepare_ptb(output_dir: str, source: str | None = None):
    """Penn Treebank words, EOS per line (--source=dir or .tgz of Mikolov's simple-examples)."""
    start = time.perf_counter()
    how = f"download {PTB_URL} and pass --source=PATH/simple-examples.tgz (or its data/ folder)"
    if source is None:
        source = fetch(PTB_URL, how)
    _need(source, "the folder with ptb.train.txt, ptb.valid.txt, ptb.test.txt, or the .tgz")
    files = {"train": "ptb.train.txt", "validation": "ptb.valid.txt", "test": "ptb.test.txt"}
    lines = {}
    if os.path.isfile(source):
        with _archive(source) as tar:
            members = {os.path.basename(m.name): m for m in tar.getmembers()}
            for split, name in files.items():
                if name not in members:
                    raise errors.DataError(f"--source={source} holds no {name}; {how}")
                lines[split] = tar.extractfile(members[name]).read().decode().splitlines()
    else:
        for split, name in files.items():
            path = os.path.join(source, name)
            if not os.path.exists(path):
                raise errors.DataError(f"--source={source} holds no {name}; {how}")
            lines[split] = _read(path).splitlines()
    eos = text.SPECIALS[text.EOS]
    tokens = {s: [w for line in ls for w in [*line.split(), eos]] for s, ls in lines.items()}
    # PTB writes unknown words as "<unk>": the reserved UNK id, not a new word.
    vocab = text.word_vocabulary([tokens["train"]])
    streams = {s: text.encode(t, vocab) for s, t in tokens.items()}
    return text.write_stream(output_dir, "ptb", streams, vocab, "Penn Treebank (Mikolov)", start)


# -------------------------------------------------------- plain text files
def _text_of(source: str) -> str:
    _need(source, "a .txt file or a directory of .txt files")
    if os.path.isdir(source):
        names = sorted(f for f in os.listdir(source) if f.endswith(".txt"))
        if not names:
            raise errors.DataError(f"--source={source} holds no .txt files")
        return "\n\n".join(_read(os.path.join(source, f)) for f in names)
    return _read(source)


def _train_test(body: str) -> dict[str, str]:
    cut = int(len(body) * 0.9)
    return {"train": body[:cut], "test": body[cut:]}


def _chars(output_dir: str, name: str, body: str, source: str, start: float):
    parts = {s: t.lower() for s, t in _train_test(body).items()}
    vocab = text.char_vocabulary(parts.values())
    streams = {s: text.encode(list(t), vocab) for s, t in parts.items()}
    return text.write_stream(output_dir, name, streams, vocab, source, start)


def prepare_nietzsche(output_dir: str, source: str | None = None):
    """Nietzsche's text (Keras's LSTM example), lower-cased characters (--source=FILE.txt)."""
    start = time.perf_counter()
    if source is None:
        source = fetch(NIETZSCHE_URL, f"download {NIETZSCHE_URL} and pass --source=PATH")
    return _chars(output_dir, "nietzsche", _text_of(source), "Nietzsche (Keras example)", start)


def prepare_text_chars(output_dir: str, source: str | None = None):
    """Any plain text, lower-cased, character by character (--source=FILE.txt or DIR of .txt)."""
    start = time.perf_counter()
    if source is None:
        raise errors.UsageError("text_chars needs --source=FILE.txt or a directory of .txt files")
    return _chars(output_dir, "text_chars", _text_of(source), f"plain text: {source}", start)


def prepare_text_words(output_dir: str, source: str | None = None):
    """Any plain text as words, EOS per paragraph (--source=FILE.txt or DIR of .txt)."""
    start = time.perf_counter()
    if source is None:
        raise errors.UsageError("text_words needs --source=FILE.txt or a directory of .txt files")
    eos = text.SPECIALS[text.EOS]
    tokens = {
        s: [w for para in part.split("\n\n") if para.strip() for w in [*text.words(para), eos]]
        for s, part in _train_test(_text_of(source)).items()
    }
    vocab = text.word_vocabulary([tokens["train"]], max_size=TEXT_VOCAB)
    streams = {s: np.asarray(text.encode(t, vocab)) for s, t in tokens.items()}
    return text.write_stream(
        output_dir, "text_words", streams, vocab, f"plain text: {source}", start
    )


PREPARERS = {
    "imdb": prepare_imdb,
    "ptb": prepare_ptb,
    "nietzsche": prepare_nietzsche,
    "text_words": prepare_text_words,
    "text_chars": prepare_text_chars,
    **pydoc_corpus.PREPARERS,
}
