"""Flags in a sweep file that make a run import and run code: refused unless --trust-code.

A sweep file is data from anywhere (a colleague, a repository).  Every
configuration becomes a `tpubench` command line, so a `model_module` (a
Python file the run imports) or a `flagfile` (which may name one) in its
flags would run that code in every run with no word to the user.  This is
tpubench's own rule (tpubench/core/code_flags.py), repeated here because
launch/ never imports tpubench.
"""

from __future__ import annotations

from tpubench_launch import errors

CODE_FLAGS = ("model_module", "flagfile")


def named(flags: dict) -> list[tuple[str, str]]:
    """(key, code path) for every code-loading flag in FLAGS."""
    out = []
    for key in CODE_FLAGS:
        value = flags.get(key)
        if value is None or value is False:
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            out.append((key, str(item)))
    return out


def shown(text: str) -> str:
    """TEXT with every control, bidi and non-ASCII character escaped (one safe line)."""
    return ascii(str(text))[1:-1][:200]


def check(path: str, where: str, flags: dict, trusted: bool) -> list[str]:
    """UsageError for the first code-loading flag unless TRUSTED; else the warning lines."""
    found = named(flags)
    if found and not trusted:
        key, code = found[0]
        raise errors.UsageError(
            f"{shown(path)}: {where}{key}={shown(code)} names code every run would import and "
            "run; refused: read that code, then pass --trust-code"
        )
    return [
        f"warning: --trust-code given: {shown(path)} makes the runs import and run "
        f"--{key}={shown(code)}"
        for key, code in found
    ]
