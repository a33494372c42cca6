"""A capped child's stderr as the user sees it: the cause kept, the noise at its cap left out.

hardware/capped_child.py's parent reads the child's stderr through
`pass_stderr`: TensorFlow's native stack after a fatal check, Python's
complaints from a process with no memory left (glued to the next line or
not) and faulthandler's stacks are left out; the child's own line at its
cap is held back for the parent to complete.
"""

from __future__ import annotations

import os
import re

from tpubench.hardware import memory_cap

# What TensorFlow's C++ prints after a fatal check at the cap: a native stack.
_NATIVE_STACK = re.compile(rb"^(\*\*\* Check failure stack trace|\s+@\s+0x)")


def pass_stderr(fd: int) -> tuple[bytes | None, bool]:
    """Copies the child's stderr to this process's, line by line, without native stacks
    (the cause line before them stays; the parent's own line follows).

    The child's own error line at its cap is held back and returned: the parent
    completes it with the record it leaves (the child may have had no memory
    left to write one).  Python's complaints from a child at its cap ("Exception
    ignored ..." and bare MemoryError lines, hundreds as objects fail to be
    freed) are left out.  Also returned: whether the child printed a line of tpubench's own.
    """
    held = None
    spoke = False
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        pending = b""
        while True:
            chunk = pipe.read(65536)
            if not chunk:
                break
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            kept = []
            for line in lines:
                line = _without_noise(line)
                if line is None:
                    continue
                spoke = spoke or line.startswith(b"tpubench ")
                if line.startswith(b"tpubench ") and memory_cap.CAP_WORDS.encode() in line:
                    held = line
                    continue
                kept.append(line + b"\n")
            if kept:
                os.write(2, b"".join(kept))
        pending = _without_noise(pending) if pending else None
        if pending:
            spoke = spoke or pending.startswith(b"tpubench ")
            os.write(2, pending)
    return held, spoke


def _without_noise(line: bytes) -> bytes | None:
    """LINE as the user sees it, or None where it is only noise from a child at its cap."""
    bare = _GLUED_NOISE.sub(b"", line)
    if bare != line and not bare.strip():
        return None
    if _NATIVE_STACK.match(bare) or _EXIT_NOISE.match(bare):
        return None
    return bare


# What Python and its allocators print from a child at its cap, line by line: complaints
# that could not format their object (a bare ":"), CPython's object dump and lost stderr,
# jemalloc's failed threads, faulthandler's stacks (a traceback's lines have ", in").
_EXIT_NOISE = re.compile(
    rb"^(Exception ignored .*|MemoryError:?|:|lost sys\.std(err|out)"
    rb"|object (address|refcount|type|type name|repr)\s*: .*|<jemalloc>: .*"
    rb"|Fatal Python error: .*|Python runtime state: .*|(Current thread|Thread) 0x[0-9a-f]+ .*"
    rb"|  File \".*\", line \d+ in .*|Extension modules: .*)\s*$"
)


# Python's complaints with no memory left for their newline, glued to the next line.
_GLUED_NOISE = re.compile(
    rb"^(MemoryError|Exception ignored (on building|in) sys\.unraisablehook( arguments)?)+"
)
