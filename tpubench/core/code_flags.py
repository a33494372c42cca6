"""Flags that make a run import and run code, and the one rule for files that name them.

A study file, a sweep file, a --cloud file or a run record is data from
anywhere (a colleague, a repository, a bucket).  When such a file becomes
command lines, a flag that loads code (`--model_module`, a Python file the
run imports; `--flagfile`, which may name one) would run that code in every
command with no word to the user.  So a file that names one is refused
unless the user passed `--trust_code`, and the refusal names the file, the
key and the code path (escaped).  The launcher's sweep files follow the same
rule (launch/trust.py), with its own flag spelling.
"""

from __future__ import annotations

from tpubench.core import errors, safe_text

CODE_FLAGS = ("model_module", "flagfile")


def named(flags: dict) -> list[tuple[str, str]]:
    """(key, code path) for every code-loading flag in FLAGS (a list value gives one each)."""
    out = []
    for key in CODE_FLAGS:
        value = flags.get(key)
        if value is None or value is False:
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            out.append((key, str(item)))
    return out


def check(
    path: str,
    where: str,
    flags: dict,
    trusted: bool,
    trust_flag: str = "--trust_code",
    runs: str = "every command it runs",
) -> list[str]:
    """Refuses FLAGS (read from PATH, at WHERE) naming code unless TRUSTED.

    Args:
      trust_flag: the flag that trusts the file, as the program spells it.
      runs: what would import the code ("every run" for a sweep).

    Returns:
      One warning line per code path when trusted (the caller prints them).

    Raises:
      UsageError: the first code-loading flag, naming PATH, the key and the path.
    """
    found = named(flags)
    if found and not trusted:
        key, code = found[0]
        raise errors.UsageError(
            f"{safe_text.shown(path)}: {where}{key}={safe_text.shown(code)} names code {runs} "
            f"would import and run; refused: read that code, then pass {trust_flag}"
        )
    return [
        f"warning: {trust_flag} given: {safe_text.shown(path)} makes the runs import and run "
        f"--{key}={safe_text.shown(code)}"
        for key, code in found
    ]


def check_settings(
    path: str,
    where: str,
    settings: dict,
    code_keys: dict[str, str],
    trusted: bool,
    trust_flag: str = "--trust_code",
) -> list[str]:
    """Refuses cloud SETTINGS (read from PATH) that choose code unless TRUSTED.

    A cloud: mapping or --cloud file may choose what runs on the user's
    machines: the package each VM installs, the container image of each pod,
    the boot image of each VM.  CODE_KEYS maps each such key to what it
    chooses (the launcher's list: launch/trust.py).

    Returns:
      One warning line per key set, when trusted (the caller prints them).

    Raises:
      UsageError: the first such key, naming PATH, the key, its value and the flag.
    """
    found = [(k, settings[k]) for k in code_keys if settings.get(k) not in (None, "")]
    if found and not trusted:
        key, value = found[0]
        raise errors.UsageError(
            f"{safe_text.shown(path)}: {where}{key}={safe_text.shown(str(value))} chooses "
            f"{code_keys[key]}: code that would run on your machines; refused: check it, then "
            f"pass {trust_flag}"
        )
    return [
        f"warning: {trust_flag} given: {safe_text.shown(path)} chooses {code_keys[key]}: "
        f"{where}{key}={safe_text.shown(str(value))}"
        for key, value in found
    ]
