"""`tpubench rerun RECORD.json`: repeat a recorded train or infer run with its flags."""

from __future__ import annotations

import os
import shlex
import sys

from absl import flags

FLAGS = flags.FLAGS


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


def main(args: list[str], full_argv: list[str]) -> int:

    from tpubench.core import errors
    from tpubench.storage import record_view, records, redaction

    if len(args) != 1:
        raise errors.UsageError("usage: tpubench rerun RECORD.json [--resume] [--results_dir=DIR]")
    try:
        rec = record_view.view(records.read(args[0]))
    except TypeError as e:
        raise errors.UsageError(f"{args[0]}: {e}") from None
    old = rec.argv if isinstance(rec.argv, list) else []
    values = rec.flags
    sub = old[1] if len(old) >= 2 else None
    if sub not in ("train", "infer") or not isinstance(values, dict):
        raise errors.UsageError(
            f"{args[0]} records no `tpubench train` or `tpubench infer` run to repeat"
        )
    hidden = sorted(k for k, v in values.items() if redaction.has_redactions(v))
    if hidden:
        raise errors.UsageError(
            f"{args[0]} has redacted flag values (--{', --'.join(hidden)}); it cannot be "
            "repeated as is: run `tpubench train` or `tpubench infer` with those flags given"
        )
    skip = {"model_dir", "results_dir", "verbose"}
    if sub == "infer":
        if FLAGS.resume:
            raise errors.UsageError(
                f"--resume continues a training run; {args[0]} records `tpubench infer`"
            )
        skip = {"results_dir", "verbose"}  # infer reads weights from model_dir
        if rec.global_batch_size:  # this record's batch size, not the whole sweep
            values = values | {"batch_size": [str(rec.global_batch_size)]}
    new = []
    for k, v in sorted(values.items()):
        if k in skip or v is None:
            continue
        if k in _MULTI_FLAGS:  # repeatable flags are given once per value
            new += [f"--{k}={x}" for x in v]
        else:
            new.append(_as_flag(k, v))
    if FLAGS.resume:
        if not rec.config.model_dir:
            raise errors.UsageError(f"{args[0]} records no model_dir to resume from")
        new.append(f"--model_dir={rec.config.model_dir}")
    recorded_dir = rec.config.results_dir or values.get("results_dir")
    new.append(f"--results_dir={FLAGS.results_dir or recorded_dir}")
    cmd = [sys.executable, "-m", "tpubench", sub, *new]
    # Quoted: the echoed line is what users paste, and a pasted line must run
    # this command and nothing else, whatever the record holds.
    echo = shlex.join(["tpubench", sub, *redaction.redact_argv(new)])
    print(f"tpubench rerun: {echo}", file=sys.stderr, flush=True)
    for module in values.get("model_module") or []:
        print(
            f"tpubench rerun: warning: the record names --model_module={shlex.quote(module)}; "
            "rerunning imports and runs that code",
            file=sys.stderr,
            flush=True,
        )
    # Replace this process: Ctrl-C and SIGTERM then reach the run
    # itself, which checkpoints and records before it exits.
    os.execv(sys.executable, cmd)


_MULTI_FLAGS = {"model_module"}


def _as_flag(name, value) -> str:
    if isinstance(value, bool):
        return f"--{name}" if value else f"--no{name}"
    if isinstance(value, list):
        return f"--{name}={','.join(map(str, value))}"
    return f"--{name}={value}"
