"""The per-user cache: $TPUBENCH_CACHE, else ~/.cache/tpubench.

Holds things that are expensive to recompute and safe to reuse: prepared
embedded datasets, FLOP counts per architecture, CPU matmul peaks.
"""

from __future__ import annotations

import json
import os


def root() -> str:
    return os.environ.get("TPUBENCH_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "tpubench"
    )


def path(*parts: str) -> str:
    return os.path.join(root(), *parts)


def load_json(name: str) -> dict:
    """The cached JSON object NAME, or {} when missing or unreadable."""
    try:
        with open(path(name)) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, json.JSONDecodeError):
        return {}


def store_json(name: str, data: dict) -> None:
    """Writes NAME atomically (temp file + rename): concurrent runs never see half a file."""
    target = path(name)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = f"{target}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, target)
