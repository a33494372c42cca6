"""`tpubench rerun RECORD.json`: repeat a recorded train or infer run with its flags.

A record is data from anywhere, so its `flags` are checked before anything
runs (docs/security.md): only flags of the subcommand being rerun, by exact
name, each with a value of that flag's type; anything else is refused in one
line naming the key.  `--model_module` makes the new run import and run a
file, and a model that tpubench does not ship is an installed package's
plug-in, so a record that names either is refused unless `--trust_code` is
given.  The run starts as `python -P -m tpubench` (children/command.py): the
working directory, where records are often downloaded, is not on its path.
"""

from __future__ import annotations

import math
import os
import shlex
import sys

from absl import flags

FLAGS = flags.FLAGS

# Flags whose value is code the new run imports and runs.
CODE_FLAGS = ("model_module",)


def define():
    flags.DEFINE_bool(
        "resume",
        False,
        "Resume the recorded run from its checkpoint (same "
        "model_dir) instead of starting a fresh run.",
    )
    flags.DEFINE_string(
        "results_dir", None, "Write the new record here (default: the recorded results_dir)."
    )
    flags.DEFINE_bool(
        "trust_code",
        False,
        "Rerun a record that names --model_module (a Python file the run imports and runs) or "
        "a model tpubench does not ship (an installed package's plug-in); without it such a "
        "record is refused.",
    )


def main(args: list[str], full_argv: list[str]) -> int:
    from tpubench.children import command
    from tpubench.core import errors, safe_text
    from tpubench.model import remembered
    from tpubench.storage import record_view, records, redaction

    if len(args) != 1:
        raise errors.UsageError(
            "usage: tpubench rerun RECORD.json [--resume] [--results_dir=DIR] [--trust_code]"
        )
    try:
        raw = records.read(args[0])
        rec = record_view.view(raw)
    except TypeError as e:
        raise errors.UsageError(f"{args[0]}: {e}") from None
    old = rec.argv if isinstance(rec.argv, list) else []
    values = rec.flags
    sub = old[1] if len(old) >= 2 else None
    if sub not in ("train", "infer") or not isinstance(values, dict):
        raise errors.UsageError(
            f"{args[0]} records no `tpubench train` or `tpubench infer` run to repeat"
        )
    kinds = _flag_kinds(sub)
    for key, value in values.items():
        check_flag(sub, kinds, key, value)
    _check_code(args[0], values)
    if values.get("model_module"):  # the files the run imported, by path and SHA-256
        values = values | {
            "model_module": remembered.recorded(args[0], raw, values["model_module"])
        }
    hidden = sorted(k for k, v in values.items() if redaction.has_redactions(v))
    if hidden:
        raise errors.UsageError(
            f"{args[0]} has redacted flag values (--{', --'.join(hidden)}); it cannot be "
            "repeated as is: run `tpubench train` or `tpubench infer` with those flags given"
        )
    skip = {"model_dir", "results_dir", "verbose", "trust_code"}  # trust: this rerun's own
    config = raw.get("config") if isinstance(raw.get("config"), dict) else {}
    if "xla_given" in config and not config["xla_given"]:
        # --xla was left unset: the rerun leaves it unset too, so its default (on for bf16
        # on a GPU) decides again rather than the value it resolved to being forced.
        skip.add("xla")
    if sub == "infer":
        if FLAGS.resume:
            raise errors.UsageError(
                f"--resume continues a training run; {args[0]} records `tpubench infer`"
            )
        skip = {"results_dir", "verbose", "trust_code"} | (skip & {"xla"})  # infer: model_dir
        batch = rec.global_batch_size
        if isinstance(batch, int) and not isinstance(batch, bool) and batch > 0:
            values = values | {"batch_size": [str(batch)]}  # this record's, not the sweep's
    new = []
    for k, v in sorted(values.items()):
        if k in skip or v is None:
            continue
        if kinds[k]["type"].startswith("multi"):  # repeatable flags are given once per value
            new += [f"--{k}={x}" for x in v]
        else:
            new.append(_as_flag(k, v))
    if FLAGS.resume:
        if not rec.config.model_dir:
            raise errors.UsageError(f"{args[0]} records no model_dir to resume from")
        new.append(f"--model_dir={rec.config.model_dir}")
    recorded_dir = rec.config.results_dir or values.get("results_dir")
    new.append(f"--results_dir={FLAGS.results_dir or recorded_dir}")
    cmd = command.python_argv("tpubench", sub, *new)
    # Quoted: the echoed line is what users paste, and a pasted line must run
    # this command and nothing else, whatever the record holds.
    echo = shlex.join(["tpubench", sub, *redaction.redact_argv(new)])
    print(f"tpubench rerun: {safe_text.shown(echo, None)}", file=sys.stderr, flush=True)
    for module in values.get("model_module") or []:
        print(
            "tpubench rerun: warning: --trust_code given: the run imports and runs "
            f"--model_module={safe_text.shown(shlex.quote(module), None)}",
            file=sys.stderr,
            flush=True,
        )
    plugin = _plugin(values)
    if plugin:
        print(
            f"tpubench rerun: warning: --trust_code given: the run imports and runs {plugin}",
            file=sys.stderr,
            flush=True,
        )
    # Replace this process: Ctrl-C and SIGTERM then reach the run
    # itself, which checkpoints and records before it exits.
    os.execve(cmd[0], cmd, command.child_env())


def _flag_kinds(sub: str) -> dict:
    """SUB's flags and their types, from a fresh process (absl defines a flag once per process)."""
    import json
    import subprocess

    from tpubench.children import command

    out = subprocess.run(
        command.python_argv("tpubench.cli.flags", sub, "--types"),
        capture_output=True,
        text=True,
        check=True,
        env=command.child_env(),
    )
    return json.loads(out.stdout)


def _check_code(path: str, values: dict) -> None:
    from tpubench.core import errors, safe_text

    named = [(k, m) for k in CODE_FLAGS for m in (values.get(k) or [])]
    if named and not FLAGS.trust_code:
        shown = ", ".join(f"--{k}={safe_text.shown(m)}" for k, m in named)
        raise errors.UsageError(
            f"{path} names code the rerun would import and run ({shown}); refused: read that "
            "code, then rerun with --trust_code"
        )
    plugin = _plugin(values)
    if plugin and not FLAGS.trust_code:
        raise errors.UsageError(
            f"{safe_text.shown(path)} names model {values['model']}, which tpubench does not "
            f"ship: the rerun would import and run {plugin}; refused: check that package, "
            "then rerun with --trust_code"
        )


def _plugin(values: dict) -> str | None:
    """What a record's model would import beyond tpubench ('the plug-in ... of the installed
    package P V'), or None for a built-in model, one its --model_module defines or a name
    nothing here provides (the run refuses it as an unknown model)."""
    from tpubench.core import code_flags
    from tpubench.model import registry

    model = code_flags.plugin_model(values)
    package = registry.plugin_package(model) if model else None
    if package is None:
        return None
    entry = registry.plugin_names()[model]
    return f"the plug-in {entry.value} of the installed package {package}"


def check_flag(sub: str, kinds: dict, key, value) -> None:
    """UsageError unless KEY is a flag of `tpubench SUB` and VALUE one of its type."""
    from tpubench.core import errors, safe_text

    def refuse(why: str):
        raise errors.UsageError(f"record flag {safe_text.shown(repr(key), 80)}: {why}")

    if key not in kinds:
        refuse(f"not a flag of `tpubench {sub}`; refused (a rerun passes only {sub}'s own flags)")
    if value is None:
        return
    kind = kinds[key]
    shown = safe_text.shown(repr(value), 80)
    typ = kind["type"]
    if typ == "bool":
        if not isinstance(value, bool):
            refuse(f"value {shown} is not a bool; accepted: true or false")
    elif typ in ("int", "float"):
        whole = typ == "int"
        if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)):
            refuse(f"value {shown}; accepted: {'a whole number' if whole else 'a number'}")
        if isinstance(value, float) and not math.isfinite(value):
            refuse(f"value {shown}; accepted: a finite number")
        low, high = kind.get("lower"), kind.get("upper")
        if low is not None and value < low:
            refuse(f"value {shown}; accepted: at least {low}")
        if value > (high if high is not None else 2**53):
            refuse(f"value {shown}; accepted: at most {high if high is not None else 2**53}")
    elif typ in ("string", "string enum"):
        if not isinstance(value, str):
            refuse(f"value {shown}; accepted: text")
        if kind.get("enum") and value not in kind["enum"]:
            refuse(f"value {shown}; accepted: one of {', '.join(kind['enum'])}")
    elif not (isinstance(value, list) and all(isinstance(x, str) for x in value)):
        refuse(f"value {shown}; accepted: a list of text")


def _as_flag(name, value) -> str:
    if isinstance(value, bool):
        return f"--{name}" if value else f"--no{name}"
    if isinstance(value, list):
        return f"--{name}={','.join(map(str, value))}"
    return f"--{name}={value}"
