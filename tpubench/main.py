"""`tpubench SUBCOMMAND [flags]`: the command-line edge.

absl has no subcommands, so the first argument picks one; only that
subcommand's flags are defined, then absl parses them (with --flagfile and
--helpfull as usual).  Every TpubenchError becomes one line on stderr and a
non-zero exit; --verbose adds the traceback.
"""

from __future__ import annotations

import os
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
        handlers = {
            "train": _train,
            "infer": _infer,
            "models": _models,
            "prices": _prices,
            "peak": _peak,
            "rerun": _rerun,
            "data": _data,
            "runs": _runs,
            "report": _report,
            "advise": _advise,
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


def _import_tf_quietly(verbose: bool, before_first_op=None) -> None:
    """Imports TensorFlow with file descriptor 2 pointed at /dev/null.

    TF 2.21 prints start-up lines from C++ (absl, oneDNN) before any log
    level applies; without --verbose they only bury the one line that
    matters.  Python-level errors still surface: only the import is muted.
    """
    if verbose:
        import tensorflow  # noqa: F401

        if before_first_op:
            before_first_op()
        return
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        import tensorflow as tf

        del tf
        if before_first_op:
            before_first_op()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _no_positional(args, sub):
    from tpubench import errors

    if args:
        raise errors.UsageError(f"unexpected argument(s) {' '.join(args)!r} for `tpubench {sub}`")


def _train(args, full_argv) -> int:
    from tpubench import controller, errors, report_text
    from tpubench import flags as flags_lib

    _no_positional(args, "train")
    cfg = flags_lib.train_config()
    try:
        controller.check_prices(cfg)  # pure Python: a bad --machine fails before TF loads
    except errors.TpubenchError as e:
        controller.record_early_failure(cfg, full_argv, flags_lib.flag_values(), e)
        raise
    _import_tf_quietly(flags_lib.FLAGS.verbose, lambda: _configure_before_tf(cfg))
    record = controller.train(cfg, full_argv, flags_lib.flag_values())
    if record.get("record_path"):
        print(report_text.train_summary(record))
    else:
        print(
            f"tpubench train: {record.get('role', 'worker')} finished; the chief task writes "
            "the run record"
        )
    return 0


def _infer(args, full_argv) -> int:
    from tpubench import errors, infer, report_text
    from tpubench import flags as flags_lib

    FLAGS = flags_lib.FLAGS
    _no_positional(args, "infer")
    cfg = None
    try:
        cfg = flags_lib.infer_config()
        infer.check_prices(cfg)  # pure Python: a bad --machine fails before TF loads
    except errors.TpubenchError as e:
        infer.record_early_failure(
            cfg, FLAGS.results_dir, FLAGS.model, full_argv, flags_lib.flag_values(), e
        )
        raise
    _import_tf_quietly(FLAGS.verbose, lambda: _configure_before_tf(cfg))
    recs = infer.run(cfg, full_argv, flags_lib.flag_values())
    if recs and recs[0].get("record_path"):
        print(report_text.infer_summary(recs))
    else:
        print("tpubench infer: this host finished; host 0 of the TPU slice writes the run records")
    return 0


def _configure_before_tf(cfg) -> None:
    """Thread pools and logical devices must be set before the first op runs."""
    from tpubench.hardware import strategy

    strategy.configure_host(cfg.hardware)


def _models(args, full_argv) -> int:
    from tpubench import flags as flags_lib
    from tpubench import model_info

    FLAGS = flags_lib.FLAGS
    _import_tf_quietly(FLAGS.verbose)
    from tpubench import registry

    for module in FLAGS.model_module:
        registry.load_module(module)
    print(model_info.listing(args, FLAGS.format, FLAGS.tiny))
    return 0


def _peak(args, full_argv) -> int:
    from tpubench import errors, peak_cli
    from tpubench import flags as flags_lib

    FLAGS = flags_lib.FLAGS
    if args:
        raise errors.UsageError(f"tpubench peak takes no arguments, got {' '.join(args)!r}")
    if FLAGS.format not in peak_cli.FORMATS:
        raise errors.unknown("--format", FLAGS.format, peak_cli.FORMATS)

    def threads():
        import tensorflow as tf

        if FLAGS.num_intra_threads:
            tf.config.threading.set_intra_op_parallelism_threads(FLAGS.num_intra_threads)

    _import_tf_quietly(FLAGS.verbose, threads)
    print(peak_cli.render(peak_cli.collect(FLAGS.reprobe, FLAGS.num_intra_threads), FLAGS.format))
    return 0


def _prices(args, full_argv) -> int:
    from tpubench import flags as flags_lib
    from tpubench.cost import cli

    FLAGS = flags_lib.FLAGS
    if args and args[0] == "import":
        print(cli.import_main(args[1:]))
        return 0
    query = " ".join(args)
    outputs = [
        cli.prices_main(query, FLAGS.format, FLAGS.price_catalog, machine, FLAGS.pricing)
        for machine in (FLAGS.machine or [None])
    ]
    print("\n\n".join(outputs))
    return 0


def _data(args, full_argv) -> int:
    from tpubench import errors
    from tpubench import flags as flags_lib
    from tpubench.data import cli

    FLAGS = flags_lib.FLAGS
    if not args or args[0] not in cli.ACTIONS:
        given = args[0] if args else ""
        if given:
            raise errors.unknown("data action", given, cli.ACTIONS)
        raise errors.UsageError(
            "usage: tpubench data ACTION [--flags]; actions: " + ", ".join(cli.ACTIONS)
        )
    action = args[0]
    _no_positional(args[1:], f"data {action}")
    if action == "list":
        print(cli.list_sources(FLAGS.format))
        return 0
    _import_tf_quietly(FLAGS.verbose)
    if action == "prepare":
        print(
            cli.prepare(
                FLAGS.dataset,
                FLAGS.output,
                flags_lib.data_options(),
                FLAGS.num_shards,
                FLAGS.overwrite,
                FLAGS.format,
            )
        )
        return 0
    if action == "check":
        text, code = cli.check(FLAGS.data_dir, FLAGS.format)
        print(text)
        return code
    print(cli.bench(flags_lib.data_bench_config()))
    return 0


def _runs(args, full_argv) -> int:
    import json

    from tpubench import errors, records
    from tpubench import flags as flags_lib

    if not args:
        raise errors.UsageError("usage: tpubench runs DIR_OR_GS_PREFIX... (where records are)")
    rows = records.summary_rows(
        args, warn=lambda m: print(f"tpubench runs: warning: {m}", file=sys.stderr)
    )
    if flags_lib.FLAGS.format == "json":
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print(f"no run records under {' '.join(args)}")
        return 0
    print(f"{'started':<26} {'status':<11} {'kind':<6} {'model':<14} {'ex/s':>11}  record")
    for r in rows:
        rate = f"{r['examples_per_sec']:,.1f}" if r["examples_per_sec"] else "-"
        print(
            f"{r['started'] or '-':<26} {r['status'] or '-':<11} {r['kind']:<6} "
            f"{r['model'] or '-':<14} {rate:>11}  {r['path']}"
        )
    return 0


def _rerun(args, full_argv) -> int:
    import shlex

    from tpubench import errors, records, redaction
    from tpubench import flags as flags_lib

    if len(args) != 1:
        raise errors.UsageError("usage: tpubench rerun RECORD.json [--resume] [--results_dir=DIR]")
    record = records.read(args[0])
    old = record.get("argv", [])
    values = record.get("flags")
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
    FLAGS = flags_lib.FLAGS
    skip = {"model_dir", "results_dir", "verbose"}
    if sub == "infer":
        if FLAGS.resume:
            raise errors.UsageError(
                f"--resume continues a training run; {args[0]} records `tpubench infer`"
            )
        skip = {"results_dir", "verbose"}  # infer reads weights from model_dir
        if record.get("global_batch_size"):  # this record's batch size, not the whole sweep
            values = values | {"batch_size": [str(record["global_batch_size"])]}
    new = []
    for k, v in sorted(values.items()):
        if k in skip or v is None:
            continue
        if k in _MULTI_FLAGS:  # repeatable flags are given once per value
            new += [f"--{k}={x}" for x in v]
        else:
            new.append(_as_flag(k, v))
    if FLAGS.resume:
        new.append(f"--model_dir={record['config']['model_dir']}")
    recorded_dir = (record.get("config") or {}).get("results_dir") or values.get("results_dir")
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


def _report(args, full_argv) -> int:
    from tpubench import flags as flags_lib
    from tpubench.report import cli

    print(cli.report_main(flags_lib.report_config(args)), end="")
    return 0


def _advise(args, full_argv) -> int:
    from tpubench import flags as flags_lib
    from tpubench.report import advise

    print(advise.advise(flags_lib.advise_config(args)), end="")
    return 0


_MULTI_FLAGS = {"model_module"}


def _as_flag(name, value) -> str:
    if isinstance(value, bool):
        return f"--{name}" if value else f"--no{name}"
    if isinstance(value, list):
        return f"--{name}={','.join(map(str, value))}"
    return f"--{name}={value}"


if __name__ == "__main__":
    run()
