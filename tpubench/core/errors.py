"""Errors a user can act on.

Anything the user can fix (a flag value, a file, missing hardware) raises a
subclass of `TpubenchError`.  `tpubench.cli.main` turns those into one line on
stderr and a non-zero exit; `--verbose` adds the traceback.  Messages name
the bad value and what would be accepted.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable


class TpubenchError(Exception):
    """Base class: an error the user can fix. Exit code 2 unless the class or EXIT_CODE says."""

    exit_code = 2

    def __init__(self, *args, exit_code: int | None = None):
        super().__init__(*args)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(TpubenchError):
    """A bad flag, name or value."""


class DataError(TpubenchError):
    """Missing, unreadable or corrupted data."""

    exit_code = 3


class HardwareError(TpubenchError):
    """The requested accelerator or cluster is not reachable."""

    exit_code = 4


class PriceError(TpubenchError):
    """A malformed price catalog or an unknown priced machine."""


class InterruptedRun(TpubenchError):
    """SIGINT/SIGTERM stopped the run; its checkpoint lets it resume."""

    exit_code = 130


class RunInvalidError(TpubenchError):
    """The run produced a result that must not be reported (NaN/inf loss)."""

    exit_code = 5


def choices_hint(
    value: str, accepted: Iterable[str], n: int = 5, listed_by: str | None = None
) -> str:
    """Returns ' (did you mean X?); accepted: a, b, c' for an unknown name.

    Past 30 accepted values only their count is given, with LISTED_BY (the
    command that lists them) when there is one.
    """
    accepted = sorted(set(accepted))
    close = difflib.get_close_matches(value, accepted, n=n, cutoff=0.5)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    if len(accepted) <= 30:
        return f"{hint}; accepted: {', '.join(accepted)}"
    where = f", list them with `{listed_by}`" if listed_by else ""
    return f"{hint}; {len(accepted)} accepted values{where}"


def unknown(
    kind: str, value: str, accepted: Iterable[str], listed_by: str | None = None
) -> UsageError:
    """An UsageError for an unknown name, listing close matches."""
    return UsageError(
        f"unknown {kind} {value!r}{choices_hint(value, accepted, listed_by=listed_by)}"
    )


def one_line(e: BaseException) -> str:
    """E's message on one line (several lines joined with '; ')."""
    lines = [x.strip() for x in str(e).splitlines() if x.strip()]
    return "; ".join(lines)


_NODE = re.compile(r"Detected at node '?([^' ]+)'? defined at")
_ROOT = re.compile(r"^\s+\(\d+\)\s+(.*)")
_TF_NOISE = re.compile(r"\s*(\[\[\{\{node [^}]*\}\}\]\]|\[Op:[^\]]*\]|\[\[[^\]]*\]\])")


def describe(e: BaseException, limit: int = 500) -> str:
    """`Type: message` in one line, with TensorFlow's real cause in it.

    TensorFlow reports a failing op inside a `tf.function` as "Graph
    execution error:" followed by the Python stack that built the op and
    only then the op's own message; the first line alone says nothing.
    This keeps the op's message and names the node, e.g. "NotFoundError:
    /data/x.tfrecord; No such file or directory (op ReadFile)".
    """
    text = str(e).strip()
    name = type(e).__name__
    if not text:
        return name
    lines = text.splitlines()
    if lines[0].strip().startswith("Graph execution error"):
        node = _NODE.search(text)
        causes = []
        for line in lines[1:]:
            root = _ROOT.match(line)  # "  (0) NOT_FOUND: ..." of "2 root error(s) found."
            if root:
                line = root.group(1)
            elif not line.strip() or line[0] in " \t" or _NODE.match(line):
                continue  # blank, the Python stack of the op, the node header
            line = _TF_NOISE.sub("", line).strip()
            if line and not line.startswith("Detected at node"):
                causes.append(line)
        if causes:
            cause = "; ".join(dict.fromkeys(causes))
            where = f" (op {node.group(1)})" if node else ""
            return f"{name}: {cause[:limit]}{where}"
    return f"{name}: {one_line(e)[:limit]}"
