"""Flags that make a run import and run code, and the one rule for files that name them.

A study file, a sweep file, a --cloud file or a run record is data from
anywhere (a colleague, a repository, a bucket).  When such a file becomes
command lines, a flag that loads code (`--model_module`, a Python file the
run imports; `--flagfile`, which may name one) would run that code in every
command with no word to the user.  So a file that names one is refused
unless the user passed `--trust_code`, and the refusal names the file, the
key and the code path (escaped).  The launcher's sweep files follow the same
rule (launch/trust.py), with its own flag spelling.

A model name chooses code too: one that an installed package provides
and tpubench does not ship is a plug-in (that package's entry point), and
the run imports that package's module.  A file that names such a model is refused
the same way unless trusted; a name typed on the command line is the
user's own choice (docs/security.md, "Code only from the installation").
"""

from __future__ import annotations

from tpubench.core import errors, installed, names, safe_text

# trust_code: infer's and tune's consent to a model_dir's remembered module, never a file's.
CODE_FLAGS = ("model_module", "flagfile", "trust_code")


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


def plugin_model(flags: dict) -> str | None:
    """The model FLAGS name when an installed package provides it and tpubench ships no model
    of that name (a plug-in, whose package the run would import); None for a built-in one,
    for a name nothing here provides (refused as unknown where it runs) and beside a code
    flag (its code is named already)."""
    model = flags.get("model")
    if not names.is_model_name(model) or named(flags) or model in names.builtin_models():
        return None
    return model if model in installed.model_names() else None


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
      UsageError: the first code-loading flag, naming PATH, the key and the path; else a
        model that is not shipped with tpubench (plugin_model), naming it.
    """
    found = named(flags)
    if found and not trusted:
        key, code = found[0]
        raise errors.UsageError(
            f"{safe_text.shown(path)}: {where}{key}={safe_text.shown(code)} names code {runs} "
            f"would import and run; refused: read that code, then pass {trust_flag}"
        )
    model = plugin_model(flags)
    if model and not trusted:
        raise errors.UsageError(
            f"{safe_text.shown(path)}: {where}model={model} is no model shipped with tpubench: "
            f"a plug-in, whose installed package {runs} would import and run; refused: check "
            f"which package provides it, then pass {trust_flag}"
        )
    lines = [
        f"warning: {trust_flag} given: {safe_text.shown(path)} makes the runs import and run "
        f"--{key}={safe_text.shown(code)}"
        for key, code in found
    ]
    if model:
        lines.append(
            f"warning: {trust_flag} given: {safe_text.shown(path)} makes the runs import and "
            f"run the plug-in that provides model {model}"
        )
    return lines


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
