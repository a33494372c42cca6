"""Reading a file TensorFlow's runs name by a local path or a gs:// URL, bounded.

A model_dir or a data_dir may be local or on gs://.  A local path goes
through the one checked opener (core/safe_files.py: a regular file of at most
LIMIT bytes, so a FIFO or /dev/zero planted there is one line, not a hang);
a gs:// object (a bucket holds no FIFO or device) is read through
tf.io.gfile once its size is known to be within LIMIT.
"""

from __future__ import annotations

from tpubench.core import errors, safe_files


def read_bytes(path: str, limit: int, accepted: str) -> bytes:
    """The bytes of PATH, local or gs://, at most LIMIT of them.

    Raises:
      safe_files.Unreadable: a local PATH that is missing or unreadable.
      UsageError: a local FIFO, device, directory; either kind over LIMIT.
      tf.errors.OpError: a gs:// object that cannot be read.
    """
    if "://" not in path:
        return safe_files.read_bytes(path, "", limit, accepted)
    import tensorflow as tf

    size = tf.io.gfile.stat(path).length
    if size > limit:
        raise errors.UsageError(
            f"{path} holds {size:,} bytes; accepted: at most {limit:,} bytes ({accepted})"
        )
    with tf.io.gfile.GFile(path, "rb") as f:
        return f.read()


def read_text(path: str, limit: int, accepted: str) -> str:
    """read_bytes as UTF-8 text (undecodable bytes replaced: logs and state files)."""
    return read_bytes(path, limit, accepted).decode("utf-8", errors="replace")


def check_regular(path: str, accepted: str) -> None:
    """A local PATH that TensorFlow reads itself (a shard, a checkpoint file) is a regular file.

    Opened without waiting and closed, never read: TensorFlow's own readers
    would wait on a FIFO for ever and read /dev/zero without end.  A gs://
    object, or a local path that is missing or unreadable, is left to the
    reader's own message.

    Raises:
      UsageError: a FIFO, a device, a directory or a socket at PATH (one line).
    """
    if "://" in path:
        return
    try:
        with safe_files.open_regular(path, "", None, accepted):
            pass
    except safe_files.Unreadable:
        return
