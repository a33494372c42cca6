"""The per-user cache: $TPUBENCH_CACHE, else ~/.cache/tpubench.

Holds things that are expensive to recompute and safe to reuse: prepared
embedded datasets, FLOP counts per architecture, CPU matmul peaks.
"""

from __future__ import annotations

import json
import math
import os

from tpubench.core import safe_files

# What an entry's field may hold, by kind: a cache file is read back from disk,
# where anything may have written it, so an entry that breaks its shape is
# dropped (and so measured again) rather than reaching arithmetic as text.
NUMBER, COUNT, TEXT, FLAG = "number", "count", "text", "flag"
MAX_BYTES = 16 << 20  # a cache file of peaks or FLOP counts: kilobytes


def root() -> str:
    return os.environ.get("TPUBENCH_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "tpubench"
    )


def path(*parts: str) -> str:
    return os.path.join(root(), *parts)


def load_json(name: str) -> dict:
    """The cached JSON object NAME, or {} when missing or unreadable."""
    try:
        data = json.loads(safe_files.read_text(path(name), "", MAX_BYTES, "a tpubench cache file"))
    except (safe_files.Unreadable, ValueError):  # none yet, or broken: measured again
        return {}
    return data if isinstance(data, dict) else {}


def fits(value, kind: str) -> bool:
    """Whether VALUE is of KIND: a finite number >= 0, a whole number >= 0, text or a bool."""
    if kind == FLAG:
        return isinstance(value, bool)
    if kind == TEXT:
        return isinstance(value, str)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if kind == COUNT:
        return isinstance(value, int) and 0 <= value < 2**63
    return math.isfinite(value) and 0 <= value <= 1e30


def load_entries(name: str, shape: dict, optional: dict | None = None) -> dict:
    """The cached JSON object NAME, keeping only entries that are mappings of SHAPE.

    Args:
      name: the cache file.
      shape: {field: kind} every kept entry holds (kinds: NUMBER, COUNT, TEXT, FLAG).
      optional: {field: kind} an entry may hold; when present it must fit.
    """
    kept = {}
    for key, entry in load_json(name).items():
        if not isinstance(entry, dict):
            continue
        if all(f in entry and fits(entry[f], k) for f, k in shape.items()) and all(
            fits(entry[f], k) for f, k in (optional or {}).items() if f in entry
        ):
            kept[key] = entry
    return kept


def store_json(name: str, data: dict) -> None:
    """Writes NAME atomically (temp file + rename): concurrent runs never see half a file."""
    target = path(name)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = f"{target}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, target)
