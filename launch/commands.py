"""Command lines: tpubench flags as argv, and reading the flags users pass through.

The launcher runs tpubench only as a subprocess (`python -P -m tpubench train
...` here, `python -I -m tpubench train ...` inside a virtualenv on a VM), so
everything it knows about a run is on that command line.
"""

from __future__ import annotations

from tpubench.children import command as child_command
from tpubench.core import names


def local_tpubench() -> list[str]:
    """tpubench in this interpreter's environment (the one tpubench-launch runs in)."""
    return child_command.isolated_python("tpubench")


def flag_value(args: list[str], name: str) -> str | None:
    """The last value given for --NAME in ARGS (`--name=v` or `--name v`), else None."""
    value = None
    for i, arg in enumerate(args):
        if arg.startswith(f"--{name}="):
            value = arg.split("=", 1)[1]
        elif arg == f"--{name}" and i + 1 < len(args) and not args[i + 1].startswith("--"):
            value = args[i + 1]
    return value


def has_flag(args: list[str], name: str) -> bool:
    """Whether ARGS sets --NAME in any spelling (--name, --name=v, --noname)."""
    return any(a == f"--{name}" or a.startswith(f"--{name}=") or a == f"--no{name}" for a in args)


def without_flag(args: list[str], name: str) -> list[str]:
    """ARGS with every --NAME=value / --NAME value / --noNAME removed."""
    out, skip = [], False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg.startswith(f"--{name}=") or arg == f"--no{name}":
            continue
        if arg == f"--{name}":
            skip = i + 1 < len(args) and not args[i + 1].startswith("--")
            continue
        out.append(arg)
    return out


def tpubench_flag_names(subcommand: str = "train") -> list[str] | None:
    """The flag names tpubench SUBCOMMAND accepts, asked of tpubench in a subprocess.

    None when tpubench cannot answer (not installed beside the launcher):
    then nothing can be checked here and the runs report bad flags themselves.
    """
    import json
    import subprocess

    try:
        out = subprocess.run(
            child_command.python_argv("tpubench.cli.flags", subcommand),
            capture_output=True,
            text=True,
            timeout=120,
            env=child_command.child_env(),
        )
        names = json.loads(out.stdout) if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return names if isinstance(names, list) else None


def gs_typo_hint(value) -> str | None:
    """A hint when VALUE looks like a gs:// URL with the slashes wrong (`gs:/b/x`), else None."""
    v = str(value)
    if v[:3].lower() != "gs:" or (v.startswith("gs://") and v[5:6] not in ("", "/")):
        return None
    fixed = "gs://" + v[3:].lstrip("/")
    return f"{v} is not a gs:// URL (two slashes after gs:); did you mean {fixed}?"


def gs_problem(value) -> str | None:
    """Why a gs:// VALUE cannot name an object ('.'/'..' or empty segments, over 1,024 bytes).

    tpubench's own rule (tpubench/core/names.gcs_problem): refused up front,
    not after a minute of retries that end by blaming the connection.
    """
    return names.gcs_problem(value)


def check_gs_urls(args: list[str]) -> None:
    """Raises UsageError at the first argument (or --flag=value) with a gs:/ typo."""
    from tpubench_launch import errors

    for token in args:
        name, value = token.split("=", 1) if token.startswith("-") and "=" in token else ("", token)
        hint = gs_typo_hint(value) or gs_problem(value)
        if hint:
            raise errors.UsageError(f"{name}={hint}" if name else hint)
