"""`tpubench SUBCOMMAND [flags]`: the command-line edge.

absl has no subcommands, so the first argument picks one; only that
subcommand's flags are defined, then absl parses them (with --flagfile and
--helpfull as usual).  Every TpubenchError becomes one line on stderr and a
non-zero exit; --verbose adds the traceback.
"""

from __future__ import annotations

import sys
import traceback

SUBCOMMANDS = {
    "train": "train a model and record throughput, accuracy, MFU and cost",
    "infer": "measure prediction throughput, latency and $ per million predictions",
    "models": "list registered models with parameters and FLOPs per example",
    "prices": "list or search the price catalog, price a --machine, or import SkyPilot files",
    "peak": "show (or --reprobe) the peak FLOP/s that MFU is measured against",
    "rerun": "repeat a recorded train or infer run with the same flags: tpubench rerun RECORD.json",
    "data": "prepare, list, bench or check datasets: tpubench data prepare|list|bench|check",
    "runs": "list run records under directories or gs:// prefixes: tpubench runs DIR...",
    "report": "compare runs: tables, charts and an HTML page from records or directories",
    "advise": "cheapest configuration for a deadline (or fastest for a budget) from records",
}


def _usage() -> str:
    lines = ["usage: tpubench SUBCOMMAND [--flags]  (tpubench SUBCOMMAND --help for its flags)", ""]
    lines += [f"  {name:<8} {text}" for name, text in SUBCOMMANDS.items()]
    return "\n".join(lines)


def run(argv: list[str] | None = None) -> None:
    argv = list(sys.argv if argv is None else argv)
    if len(argv) < 2 or argv[1] in ("-h", "--help", "help"):
        print(_usage())
        sys.exit(0 if len(argv) >= 2 else 2)
    sub = argv[1]
    if sub not in SUBCOMMANDS:
        from tpubench import errors

        print(f"tpubench: error: {errors.unknown('subcommand', sub, SUBCOMMANDS)}", file=sys.stderr)
        sys.exit(2)
    from tpubench import argv_checks, errors

    try:
        argv_checks.check(argv[2:])  # a flag file of /dev/zero, a path that is not UTF-8
    except errors.UsageError as e:
        print(f"tpubench {sub}: error: {e}", file=sys.stderr)
        sys.exit(2)
    verbose = any(a in ("--verbose", "--verbose=true") for a in argv)
    if sub in ("train", "infer", "models", "data"):  # the subcommands that load TensorFlow
        from tpubench import tflog

        tflog.silence(verbose)
    from absl import app

    from tpubench import flags as flags_lib

    flags_lib.define(sub)
    # absl's --helpshort lists the "main module's" key flags: make this
    # subcommand's flags that module's, so --helpshort shows them.
    for name in sorted(flags_lib._defined):
        flags_lib.FLAGS.register_key_flag_for_module(sys.argv[0], flags_lib.FLAGS[name])
    app.run(
        lambda args: _dispatch(sub, args, argv),
        argv=[f"tpubench {sub}"] + argv[2:],
        flags_parser=lambda a: _parse_flags(sub, a),
    )


def _parse_flags(sub: str, argv: list[str]) -> list[str]:
    """absl's parser, with a bad flag reported in one line (exit 2)."""
    from absl import flags

    from tpubench import gcs

    for token in argv[1:]:
        name, value = token.split("=", 1) if token.startswith("-") and "=" in token else ("", token)
        hint = gcs.typo_hint(value)
        if hint:
            where = f"{name}=" if name else ""
            print(f"tpubench {sub}: error: {where}{hint}", file=sys.stderr)
            sys.exit(2)
    try:
        return flags.FLAGS(argv)
    except flags.Error as e:
        print(f"tpubench {sub}: error: {e} (see tpubench {sub} --helpshort)", file=sys.stderr)
        sys.exit(2)
    except SystemExit as e:
        # absl's help flags print and exit 1; asking for help is not a failure.
        if e.code == 1 and _HELP_FLAGS & {a.split("=")[0] for a in argv[1:]}:
            sys.exit(0)
        raise


_HELP_FLAGS = {"--help", "--helpshort", "--helpfull", "--helpxml", "-?"}


def _dispatch(sub: str, args: list[str], full_argv: list[str]) -> int:
    from absl import logging

    from tpubench import errors, redaction
    from tpubench import flags as flags_lib

    verbose = flags_lib.FLAGS.verbose
    if not verbose:
        logging.set_verbosity(logging.ERROR)
        import warnings

        warnings.filterwarnings("ignore")
    try:
        from tpubench import commands, records_cli

        handlers = {
            "train": commands.train,
            "infer": commands.infer,
            "models": commands.models,
            "prices": commands.prices,
            "peak": commands.peak,
            "rerun": records_cli.rerun,
            "data": commands.data,
            "runs": records_cli.runs,
            "report": commands.report,
            "advise": commands.advise,
        }
        return handlers[sub](args[1:], full_argv) or 0
    except errors.TpubenchError as e:
        if verbose:
            traceback.print_exc()
        where = getattr(e, "record_path", None)
        line = f"tpubench {sub}: error: {errors.one_line(e)}"
        print(
            redaction.redact_text(line + (f" [run record: {where}]" if where else "")),
            file=sys.stderr,
        )
        return e.exit_code
    except KeyboardInterrupt:
        print(f"tpubench {sub}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - the edge: one line unless --verbose
        if verbose:
            traceback.print_exc()
        print(
            redaction.redact_text(
                f"tpubench {sub}: internal error: {errors.describe(e)} "
                "(rerun with --verbose for the traceback)"
            ),
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    run()
