"""Real datasets that ship with installed packages, prepared once into the cache.

A model that lists one of these in its `datasets` trains on it when no
--data_dir is given: no network, no files to fetch.  Each is prepared on
first use into $TPUBENCH_CACHE/datasets (atomically: concurrent runs never
see half a directory).
"""

from __future__ import annotations

import os
import shutil
import tempfile

from tpubench.data import digits, pydoc_corpus
from tpubench.data import manifest as manifest_lib
from tpubench.storage import cache as cache_lib

# name -> (prepare(output_dir, source) -> Manifest, cache-version key function)
_TEXT = {name: (fn, pydoc_corpus.version_key) for name, fn in pydoc_corpus.PREPARERS.items()}
NAMES = (digits.NAME, *_TEXT)


def ensure_prepared(name: str) -> str:
    """The path of embedded dataset NAME, preparing it into the cache first if needed."""
    if name == digits.NAME:
        return digits.ensure_prepared()
    prepare, version = _TEXT[name]
    target = cache_lib.path("datasets", f"{name}-{version()}")
    if os.path.exists(os.path.join(target, manifest_lib.MANIFEST)):
        return target
    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{name}-", dir=parent)
    try:
        prepare(tmp)
        try:
            os.rename(tmp, target)
        except OSError:  # another process prepared it first
            if not os.path.exists(os.path.join(target, manifest_lib.MANIFEST)):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
