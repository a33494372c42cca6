"""Which checkpoint a run resumes from: the newest intact one, found by listing.

The `checkpoint` state file is only a hint that a crash or a bad disk can
break (garbage, a path from another machine, a name whose files are
damaged).  Trusting it made a run with a garbage state file start from
step 0 and rotate away an intact ckpt-200.  So the candidates are the
`ckpt-N.index` files themselves, newest first, and a candidate is used
only when it reads back whole: its index parses and every tensor reads
with the crc32c TensorFlow stored for it in the index.  That catches an
empty or damaged `.index`, a truncated or missing `.data` shard and
flipped bits.  Reading the tensors costs one extra read of the newest
checkpoint at start-up.

An error that says nothing about the files (permission denied, a GCS 503
after TensorFlow's retries) is raised as it is: falling back to an older
checkpoint because the network hiccuped would throw training away.
"""

from __future__ import annotations

import dataclasses
import re

from tpubench.core import errors
from tpubench.storage import any_path
from tpubench.storage.run_dir import RunDir

PREFIX = "ckpt"
STATE_BYTES = 1 << 20  # the `checkpoint` state file: a few lines per kept checkpoint
STATE_WHAT = "the checkpoint state TensorFlow writes"
FILE_WHAT = "a checkpoint file TensorFlow writes; remove it, or give a fresh --model_dir"
_INDEX = re.compile(rf"{PREFIX}-(\d+)\.index$")


@dataclasses.dataclass
class Choice:
    """What `choose` found in a checkpoint directory."""

    path: str | None  # the prefix to restore (".../ckpt-N"); None: no checkpoint at all
    damaged: list[tuple[str, str]]  # (file, why) of each newer candidate, newest first
    state_file: str | None  # why the `checkpoint` state file was not used; None: it agreed


class DamagedCheckpoints(errors.TpubenchError):
    """Every checkpoint in --model_dir is damaged: stop rather than train from step 0."""


def directory(model_dir: str) -> str:
    """Where a run's checkpoints are kept under MODEL_DIR (the chief's, in a cluster)."""
    return RunDir.of(model_dir).checkpoints


def steps(ckpt_dir: str) -> list[int]:
    """The N of every `ckpt-N.index` in CKPT_DIR, newest first."""
    import tensorflow as tf

    found = []
    for path in tf.io.gfile.glob(f"{ckpt_dir.rstrip('/')}/{PREFIX}-*.index"):
        m = _INDEX.search(path)
        if m:
            found.append(int(m.group(1)))
    return sorted(found, reverse=True)


def _not_damage(e: BaseException) -> bool:
    """An error about access or the network, not about the checkpoint's bytes."""
    import tensorflow as tf

    transient = (
        tf.errors.PermissionDeniedError,
        tf.errors.UnauthenticatedError,
        tf.errors.UnavailableError,
        tf.errors.DeadlineExceededError,
        tf.errors.ResourceExhaustedError,
        tf.errors.CancelledError,
        tf.errors.AbortedError,
    )
    return isinstance(e, transient)


def check_files(prefix: str) -> None:
    """PREFIX's local index and data files are regular files, or a UsageError naming one
    (TensorFlow would wait on a FIFO for ever, read /dev/zero without end)."""
    import tensorflow as tf

    for path in (prefix + ".index", *tf.io.gfile.glob(prefix + ".data-*")):
        any_path.check_regular(path, FILE_WHAT)


def check(prefix: str) -> tuple[str, str] | None:
    """None when the checkpoint at PREFIX reads back whole; else (damaged file, why)."""
    import tensorflow as tf

    index = prefix + ".index"
    check_files(prefix)
    try:
        if tf.io.gfile.stat(index).length == 0:
            return index, "the file is empty"
        reader = tf.train.load_checkpoint(prefix)
    except Exception as e:  # noqa: BLE001 - any parse failure is damage, see _not_damage
        if _not_damage(e):
            raise
        return index, _why(e)
    data = sorted(tf.io.gfile.glob(prefix + ".data-*"))
    where = data[0] if len(data) == 1 else prefix + ".data-*"
    try:
        for name in reader.get_variable_to_shape_map():
            reader.get_tensor(name)  # checks the tensor's crc32c
    except Exception as e:  # noqa: BLE001
        if _not_damage(e):
            raise
        return where, _why(e)
    return None


_FUNCTION_NODE = re.compile(r"\{\{function_node [^}]*\}\}\s*|\s*\[Op:[^\]]*\]( name: ?)?")


def save_failed(ckpt_dir: str, step: int, e: BaseException) -> str:
    """Why the save at STEP failed, in one line; its half-written `ckpt-STEP_temp` is removed.

    The temporary directory is all a failed save leaves; on a full disk it
    holds space the next save needs.
    """
    import tensorflow as tf

    try:
        temp = f"{ckpt_dir.rstrip('/')}/{PREFIX}-{step}_temp"
        if tf.io.gfile.exists(temp):
            tf.io.gfile.rmtree(temp)
    except Exception:  # noqa: BLE001 - best effort: the warning matters more
        pass
    return f"{type(e).__name__}: {_FUNCTION_NODE.sub('', errors.one_line(e)).strip()[:300]}"


def remove_abandoned(ckpt_dir: str) -> list[str]:
    """Removes what saves that never finished left in CKPT_DIR; returns the paths removed.

    A save writes `ckpt-N_temp/` and then `ckpt-N.data-*` before its
    `ckpt-N.index`; a run stopped in between (an abandoned save, a SIGKILL)
    leaves those behind.  Called by the chief under the model_dir lock, so
    no other run's save is in progress.
    """
    import tensorflow as tf

    base = ckpt_dir.rstrip("/")
    removed = []
    for path in sorted(tf.io.gfile.glob(f"{base}/{PREFIX}-*_temp")):
        if tf.io.gfile.isdir(path):
            tf.io.gfile.rmtree(path)
        else:
            tf.io.gfile.remove(path)
        removed.append(path)
    whole = set(steps(ckpt_dir))
    for path in sorted(tf.io.gfile.glob(f"{base}/{PREFIX}-*.data-*")):
        m = re.search(rf"{PREFIX}-(\d+)\.data-", path)
        if m and int(m.group(1)) not in whole:
            tf.io.gfile.remove(path)
            removed.append(path)
    return removed


def _why(e: BaseException) -> str:
    text = errors.one_line(e) or type(e).__name__
    if isinstance(e, IndexError):  # what a short read of a .data shard raises
        text = f"truncated ({text})"
    return text[:300]


def _state(ckpt_dir: str) -> tuple[str | None, str | None]:
    """(the state file's newest checkpoint name, why it is unusable or None)."""
    import tensorflow as tf
    from google.protobuf import text_format
    from tensorflow.python.checkpoint import checkpoint_management

    path = f"{ckpt_dir.rstrip('/')}/checkpoint"
    if not tf.io.gfile.exists(path):
        return None, "it is missing"
    try:
        text = any_path.read_text(path, STATE_BYTES, STATE_WHAT)
        state = text_format.Parse(text, checkpoint_management.CheckpointState())
    except Exception as e:  # noqa: BLE001 - any parse failure: the file is garbage
        if isinstance(e, errors.UsageError) or _not_damage(e):  # a FIFO there: one line
            raise
        return None, f"it does not parse ({errors.one_line(e)[:120]})"
    name = state.model_checkpoint_path.rsplit("/", 1)[-1]
    return name or None, None if name else "it names no checkpoint"


def choose(ckpt_dir: str) -> Choice:
    """The newest intact checkpoint in CKPT_DIR, and what was skipped on the way."""
    found = steps(ckpt_dir)
    if not found:
        return Choice(None, [], None)
    damaged = []
    chosen = None
    for n in found:
        prefix = f"{ckpt_dir.rstrip('/')}/{PREFIX}-{n}"
        bad = check(prefix)
        if bad is None:
            chosen = prefix
            break
        damaged.append(bad)
    named, why = _state(ckpt_dir)
    if chosen is not None and why is None and named != chosen.rsplit("/", 1)[-1]:
        why = f"it names {named}"
    return Choice(chosen, damaged, why)


def repair_state(ckpt_dir: str, chosen: str) -> None:
    """Rewrites the state file to name CHOSEN and the checkpoints older than it.

    The CheckpointManager then rotates from what is really there, and never
    lists a damaged newer checkpoint as the latest.
    """
    import tensorflow as tf

    n = int(chosen.rsplit("-", 1)[-1])
    older = [f"{ckpt_dir.rstrip('/')}/{PREFIX}-{m}" for m in sorted(steps(ckpt_dir)) if m <= n]
    tf.compat.v1.train.update_checkpoint_state(ckpt_dir, chosen, all_model_checkpoint_paths=older)


def notes(choice: Choice, ckpt_dir: str) -> list[str]:
    """Warnings for the console and the record: what was damaged, what was used instead."""
    out = []
    use = choice.path.rsplit("/", 1)[-1] if choice.path else None
    for file, why in choice.damaged:
        out.append(f"checkpoint file {file} is damaged ({why}); resuming from {use} instead")
    if choice.state_file and not choice.damaged:
        state = f"{ckpt_dir.rstrip('/')}/checkpoint"
        out.append(
            f"checkpoint state file {state} was not used ({choice.state_file}); "
            f"resuming from {use}, the newest intact checkpoint in the directory"
        )
    return out


def all_damaged(choice: Choice, model_dir: str) -> DamagedCheckpoints:
    """The one line for a model_dir whose every checkpoint is damaged."""
    file, why = choice.damaged[0]
    more = f" (and {len(choice.damaged) - 1} older ones)" if len(choice.damaged) > 1 else ""
    return DamagedCheckpoints(
        f"--model_dir={model_dir}: checkpoint file {file} is damaged ({why}){more} and no "
        "intact checkpoint is left; move the damaged ckpt-* files out of the way to train from "
        "step 0, or give a fresh --model_dir"
    )
