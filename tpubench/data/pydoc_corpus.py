"""The embedded real text: Python's own reference documentation.

Every CPython install ships `pydoc_data.topics`, the text `help()` shows for
its topics ("if", "types", "string-methods", "debugger", ...): about 70,000
words of real technical English with grammar and code examples, from the
Language and Library References.  tpubench prepares three datasets from it,
offline and in seconds:

* `pydoc_topics`: which topic a paragraph comes from, among the 8 topics
  with the most paragraphs found in exactly one topic (about 800 paragraphs
  of 5+ words; split 80/20 stratified, seed 0): the classifiers' task.
* `pydoc_words`: the deduplicated paragraphs as a word stream (EOS after
  each paragraph; every 10th paragraph is test text; words seen once in
  training become UNK): language models and BERT.
* `pydoc_chars`: the same text, lower-cased, character by character: the
  character-level LSTM.

The text changes a little between Python versions, so prepared copies are
cached per version of the text (its fingerprint is in every record).
"""

from __future__ import annotations

import collections
import hashlib
import platform
import re
import time
from pydoc_data import topics

import numpy as np

from tpubench.core import errors
from tpubench.data import text

TOPICS, WORDS, CHARS = "pydoc_topics", "pydoc_words", "pydoc_chars"
NUM_TOPICS = 8
MIN_WORDS = 5
SPLIT_SEED = 0
SOURCE = "Python {version} pydoc_data.topics (the reference documentation behind help())"


def _topics() -> dict[str, str]:

    return topics.topics


def version_key() -> str:
    """A short hash of the installed text: cached copies are per text version."""
    items = sorted(_topics().items())
    return hashlib.sha256(repr(items).encode()).hexdigest()[:10]


def _source() -> str:

    return SOURCE.format(version=platform.python_version())


_UNDERLINE = re.compile(r"^\s*[*=\-~^]{3,}\s*$", re.M)


def paragraphs() -> tuple[list[tuple[str, str]], set[str]]:
    """([(topic, paragraph)] first occurrences in topic order, paragraphs in 2+ topics).

    Topics overlap (the "specialnames" topic contains "customization", ...),
    so a paragraph is kept once, and the set names those that appear under
    several topics (they have no single label).
    """
    first: dict[str, str] = {}
    shared: set[str] = set()
    for topic, body in sorted(_topics().items()):
        for raw in re.split(r"\n\s*\n", _UNDERLINE.sub("", body)):
            para = raw.strip("\n").rstrip()
            if not para.strip():
                continue
            if para in first:
                if first[para] != topic:
                    shared.add(para)
                continue
            first[para] = topic
    return [(t, p) for p, t in first.items()], shared


def _check_source(name: str, source: str | None) -> None:
    if source:
        raise errors.UsageError(
            f"dataset {name!r} comes from the installed Python (pydoc_data); it takes no "
            f"--source (got {source!r})"
        )


def prepare_topics(output_dir: str, source: str | None = None):
    """Python's embedded help() text: which of 8 topics a paragraph is from (offline)."""
    from sklearn.model_selection import train_test_split

    _check_source(TOPICS, source)
    start = time.perf_counter()
    paras, shared = paragraphs()
    labelled = [(t, p) for t, p in paras if p not in shared and len(text.words(p)) >= MIN_WORDS]
    counts = collections.Counter(t for t, _ in labelled)
    # Most paragraphs first; ties by name so the choice is stable.
    topics = sorted(sorted(counts), key=lambda t: -counts[t])[:NUM_TOPICS]
    kept = [(topics.index(t), p) for t, p in labelled if t in topics]
    ys = [y for y, _ in kept]
    train, test = train_test_split(kept, test_size=0.2, random_state=SPLIT_SEED, stratify=ys)
    train_tokens = [text.words(p) for _, p in train]
    vocab = text.word_vocabulary(train_tokens)
    splits = {
        "train": ([text.encode(t, vocab) for t in train_tokens], [y for y, _ in train]),
        "test": ([text.encode(text.words(p), vocab) for _, p in test], [y for y, _ in test]),
    }
    return text.write_sequences(
        output_dir, TOPICS, splits, vocab, topics, _source() + ": paragraph topics", start
    )


def _split_paragraphs() -> dict[str, list[str]]:
    paras, _ = paragraphs()
    out: dict[str, list[str]] = {"train": [], "test": []}
    for i, (_, p) in enumerate(paras):
        out["test" if i % 10 == 9 else "train"].append(p)
    return out


def prepare_words(output_dir: str, source: str | None = None):
    """Python's embedded help() text as words, EOS per paragraph (~70,000 words; offline)."""
    _check_source(WORDS, source)
    start = time.perf_counter()
    split_tokens = {
        split: [[*text.words(p), text.SPECIALS[text.EOS]] for p in paras]
        for split, paras in _split_paragraphs().items()
    }
    vocab = text.word_vocabulary(split_tokens["train"], min_count=2)
    streams = {
        split: text.encode([t for para in paras for t in para], vocab)
        for split, paras in split_tokens.items()
    }
    return text.write_stream(
        output_dir, WORDS, streams, vocab, _source() + ": words", start, chunk=4096
    )


def prepare_chars(output_dir: str, source: str | None = None):
    """Python's embedded help() text, lower-cased, character by character (offline)."""
    _check_source(CHARS, source)
    start = time.perf_counter()
    texts = {split: "\n\n".join(paras).lower() for split, paras in _split_paragraphs().items()}
    vocab = text.char_vocabulary(texts.values())
    streams = {split: text.encode(list(t), vocab) for split, t in texts.items()}
    return text.write_stream(
        output_dir, CHARS, streams, vocab, _source() + ": characters", start, chunk=16_384
    )


PREPARERS = {TOPICS: prepare_topics, WORDS: prepare_words, CHARS: prepare_chars}


def stats() -> dict[str, int]:
    """Sizes of the embedded text, for docs and tests."""
    paras, shared = paragraphs()
    return {
        "paragraphs": len(paras),
        "shared_paragraphs": len(shared),
        "words": int(np.sum([len(text.words(p)) for _, p in paras])),
        "characters": sum(len(p) for _, p in paras),
    }
