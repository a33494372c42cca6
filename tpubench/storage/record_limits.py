"""What a run record may be before a reader walks it: its id a file name, its nesting shallow.

Pure Python; `storage/records.py` turns a breach into a BadRecord.
"""

from __future__ import annotations

import re

# A run id is a file name: one word of these characters (records.new_run_id's
# form), so an id read from a file (a record, a lock) never names a path elsewhere.
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")

# Run records nest about 7 levels deep (a TPU record's per-host timings); a
# reader's recursion must never meet a file built to exhaust it.
MAX_DEPTH = 64


def depth(value) -> int:
    """How deep VALUE's dicts and lists nest (a scalar is 0), without recursing."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            items = item.values()
        elif isinstance(item, list):
            items = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in items)
    return deepest
