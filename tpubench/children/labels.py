"""The identity of a labelled run: its stable label and where its model_dir goes.

A sweep's configuration, a study's cell and a tune's trial are each passed
to their run as `--run_label`; a record carrying the label with a done status
(storage/records.DONE_STATUSES) marks the run done, so a rerun of the same
command resumes.  The label must stay the same from one invocation to the
next: a hash of what the run is, never of when it ran.
"""

from __future__ import annotations

import hashlib
import json
import os


def stable_id(prefix: str, identity, digits: int = 10) -> str:
    """PREFIX-<DIGITS hex digits of the SHA-256 of IDENTITY as sorted JSON>.

    The same identity (any JSON-able value; other values by their str) always
    gives the same id, whatever the order of its keys.
    """
    blob = json.dumps(identity, sort_keys=True, default=str)
    return f"{prefix}-{hashlib.sha256(blob.encode()).hexdigest()[:digits]}"


def model_dir(root: str, label: str) -> str:
    """ROOT/model_dirs/LABEL: the checkpoints and metrics of the run labelled LABEL."""
    return os.path.join(root, "model_dirs", label)
