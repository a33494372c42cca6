"""`tpubench SUBCOMMAND [flags]`: the command-line edge.

absl has no subcommands, so the first argument picks one (subcommands.py
lists them); only that subcommand's flags are defined, then absl parses them
(with --flagfile and --helpfull as usual).  Every TpubenchError becomes one
line on stderr and a non-zero exit; --verbose adds the traceback.
"""

from __future__ import annotations

import os
import sys
import traceback
import warnings

from absl import app, logging
from absl import flags as absl_flags

from tpubench.cli import argv_checks, help_text, subcommands, tflog
from tpubench.cli import flags as flags_lib
from tpubench.core import bounds, errors, names, safe_text
from tpubench.hardware import capped_child, memory_cap
from tpubench.storage import gcs, redaction

_HELP_FLAGS = {"--help", "--helpshort", "--helpfull", "--helpxml", "-?"}


def _usage() -> str:
    lines = ["usage: tpubench SUBCOMMAND [--flags]  (tpubench SUBCOMMAND --help for its flags)", ""]
    lines += [f"  {s.name:<8} {s.help}" for s in subcommands.SUBCOMMANDS]
    return "\n".join(lines)


def run(argv: list[str] | None = None) -> None:
    argv = list(sys.argv if argv is None else argv)
    if len(argv) < 2 or argv[1] in ("-h", "--help", "help"):
        print(_usage())
        sys.exit(0 if len(argv) >= 2 else 2)
    sub = subcommands.BY_NAME.get(argv[1])
    if sub is None:
        names = [s.name for s in subcommands.SUBCOMMANDS]
        print(f"tpubench: error: {errors.unknown('subcommand', argv[1], names)}", file=sys.stderr)
        sys.exit(2)
    try:
        argv_checks.check(argv[2:])  # a flag file of /dev/zero, a path that is not UTF-8
    except errors.UsageError as e:
        print(f"tpubench {sub.name}: error: {safe_text.shown(str(e), None)}", file=sys.stderr)
        sys.exit(2)
    if sub.loads_tensorflow:
        tflog.silence(any(a in ("--verbose", "--verbose=true") for a in argv))
    flags_lib.define(sub.name)
    asked = set(argv[2:])
    if "--helpfull" in asked:
        print(help_text.grouped(sub.name, flags_lib.defined()))  # every flag, in groups
        sys.exit(0)
    if {"--help", "-h", "--helpshort", "-?"} & asked:
        print(help_text.short(sub.name, sub.help, flags_lib.defined()))  # the common ones
        sys.exit(0)
    # absl's --helpshort lists the "main module's" key flags: make this
    # subcommand's flags that module's, so --helpshort shows them.
    for name in sorted(flags_lib.defined()):
        flags_lib.FLAGS.register_key_flag_for_module(sys.argv[0], flags_lib.FLAGS[name])
    app.run(
        lambda args: _dispatch(sub, args, argv),
        argv=[f"tpubench {sub.name}"] + argv[2:],
        flags_parser=lambda a: _parse_flags(sub.name, a),
    )


def _parse_flags(sub: str, argv: list[str]) -> list[str]:
    """absl's parser, with a bad flag reported in one line (exit 2)."""
    for token in argv[1:]:
        name, value = token.split("=", 1) if token.startswith("-") and "=" in token else ("", token)
        hint = gcs.typo_hint(value) or names.gcs_problem(value)
        if hint:
            where = f"{name}=" if name else ""
            print(safe_text.shown(f"tpubench {sub}: error: {where}{hint}", None), file=sys.stderr)
            sys.exit(2)
    try:
        rest = absl_flags.FLAGS(argv)
        _check_ranges()
        return rest
    except errors.UsageError as e:
        print(safe_text.shown(f"tpubench {sub}: error: {e}", None), file=sys.stderr)
        sys.exit(2)
    except absl_flags.Error as e:
        line = f"tpubench {sub}: error: {e} (see tpubench {sub} --helpshort)"
        print(safe_text.shown(line, None), file=sys.stderr)  # flag files are outside text
        sys.exit(2)
    except SystemExit as e:
        # absl's help flags print and exit 1; asking for help is not a failure.
        if e.code == 1 and _HELP_FLAGS & {a.split("=")[0] for a in argv[1:]}:
            sys.exit(0)
        raise


def _check_ranges() -> None:
    """Every numeric flag within its range (core/bounds.py), before the subcommand starts."""
    for name in sorted(flags_lib.defined()):
        flag = absl_flags.FLAGS[name]
        kind = flag.flag_type()  # a list: infer's --batch_size=1,8,32
        if flag.present and ("int" in kind or "float" in kind or "list" in kind):
            bounds.check_flag(name, flag.value)


def _dispatch(sub: subcommands.Subcommand, args: list[str], full_argv: list[str]) -> int:
    verbose = flags_lib.FLAGS.verbose
    if not verbose:
        logging.set_verbosity(logging.ERROR)

        warnings.filterwarnings("ignore")
    try:
        _cap_memory(sub.name)
        return sub.module.main(args[1:], full_argv) or 0
    except errors.TpubenchError as e:
        if verbose:
            traceback.print_exc()
        where = getattr(e, "record_path", None)
        line = f"tpubench {sub.name}: error: {errors.one_line(e)}"
        line += f" [run record: {where}]" if where else ""
        # Errors quote record keys and values: one safe line (safe_text).
        print(safe_text.shown(redaction.redact_text(line), None), file=sys.stderr)
        return _end(e.exit_code)
    except KeyboardInterrupt:
        print(f"tpubench {sub.name}: interrupted", file=sys.stderr)
        return _end(130)
    except BrokenPipeError:
        # The reader went away (`tpubench models | head`): stop quietly, as
        # Unix tools do; point stdout at /dev/null so the exit flush is silent.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as e:  # noqa: BLE001 - the edge: one line unless --verbose
        if verbose:
            traceback.print_exc()
        capped = memory_cap.explain(e)
        if capped:
            print(f"tpubench {sub.name}: error: {capped}", file=sys.stderr)
            return _end(1)
        line = (
            f"tpubench {sub.name}: internal error: {errors.describe(e)} "
            "(rerun with --verbose for the traceback)"
        )
        print(safe_text.shown(redaction.redact_text(line), None), file=sys.stderr)
        return _end(1)


def _end(code: int) -> int:
    """CODE, or the process ends here with CODE when a signal stopped a slow-disk run.

    Called while the error (whose traceback holds the input pipeline) is still
    alive: freeing that pipeline after a signal cancelled its emulated-disk
    reads can hang in TensorFlow's destructor (data/throttle.py), and the
    record and the error line are already out.
    """
    throttle = sys.modules.get("tpubench.data.throttle")
    if throttle is not None and throttle.stopped_by_signal():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _cap_memory(command: str) -> None:
    """--memory_limit: the rest of the command runs in a capped child (before TensorFlow loads).

    A LoadGen scenario (`infer --scenario`) runs in a guarded child even uncapped: LoadGen
    aborts the process on its own checks, and only a parent can then mark the record failed.
    """
    defined = flags_lib.defined()
    loadgen = command == "infer" and "scenario" in defined and bool(flags_lib.FLAGS.scenario)
    if "memory_limit" not in defined or not flags_lib.FLAGS.memory_limit:
        if not loadgen:
            return
        limit = None
    elif command not in ("train", "infer"):  # tune passes it on: each trial caps itself
        memory_cap.parse(flags_lib.FLAGS.memory_limit)
        return
    else:
        limit = memory_cap.parse(flags_lib.FLAGS.memory_limit)
    results_dir = getattr(flags_lib.FLAGS, "results_dir", None)
    # What a record needs if the capped child dies before writing its own.
    base = {"argv": redaction.redact_argv(sys.argv)}
    for name in ("model", "run_label"):
        value = getattr(flags_lib.FLAGS, name, None) if name in flags_lib.defined() else None
        if value is not None:
            base[name] = {"name": value} if name == "model" else value
    capped_child.run_capped(limit, results_dir, command, base)


if __name__ == "__main__":
    run()
