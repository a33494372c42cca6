"""The handlers of the subcommands that run or list things, one function each.

main.py parses the flags and calls one of these with the positional
arguments; each turns FLAGS into its config and calls the layer below.
"""

from __future__ import annotations

import os
import sys


def import_tf_quietly(verbose: bool, before_first_op=None) -> None:
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


def train(args, full_argv) -> int:
    from tpubench import controller, errors, report_text
    from tpubench import flags as flags_lib

    _no_positional(args, "train")
    cfg = flags_lib.train_config()
    try:
        controller.check_prices(cfg)  # pure Python: a bad --machine fails before TF loads
    except errors.TpubenchError as e:
        controller.record_early_failure(cfg, full_argv, flags_lib.flag_values(), e)
        raise
    import_tf_quietly(flags_lib.FLAGS.verbose, lambda: _configure_before_tf(cfg))
    from tpubench.run import unsent

    try:
        record = controller.train(cfg, full_argv, flags_lib.flag_values())
    except unsent.RecordNotWritten as e:
        if e.record.get("status") == "ok":  # the results first, then the one-line error
            print(report_text.train_summary(e.record), flush=True)
        raise
    if record.get("record_path"):
        print(report_text.train_summary(record))
    else:
        print(
            f"tpubench train: {record.get('role', 'worker')} finished; the chief task writes "
            "the run record"
        )
    return 0


def infer(args, full_argv) -> int:
    from tpubench import errors, infer, infer_text
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
    import_tf_quietly(FLAGS.verbose, lambda: _configure_before_tf(cfg))
    recs = infer.run(cfg, full_argv, flags_lib.flag_values())
    if recs and recs[0].get("record_path"):
        print(infer_text.infer_summary(recs))
    else:
        print("tpubench infer: this host finished; host 0 of the TPU slice writes the run records")
    return 0


def _configure_before_tf(cfg) -> None:
    """Thread pools and logical devices must be set before the first op runs."""
    from tpubench.hardware import strategy

    strategy.configure_host(cfg.hardware)


def models(args, full_argv) -> int:
    from tpubench import flags as flags_lib
    from tpubench import model_info

    FLAGS = flags_lib.FLAGS
    import_tf_quietly(FLAGS.verbose)
    from tpubench import registry

    for module in FLAGS.model_module:
        registry.load_module(module)
    print(model_info.listing(args, FLAGS.format, FLAGS.tiny))
    return 0


def peak(args, full_argv) -> int:
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

    import_tf_quietly(FLAGS.verbose, threads)
    print(peak_cli.render(peak_cli.collect(FLAGS.reprobe, FLAGS.num_intra_threads), FLAGS.format))
    return 0


def prices(args, full_argv) -> int:
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


def data(args, full_argv) -> int:
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
    import_tf_quietly(FLAGS.verbose)
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


def report(args, full_argv) -> int:
    from tpubench import flags as flags_lib
    from tpubench.report import cli

    print(cli.report_main(flags_lib.report_config(args)), end="")
    return 0


def advise(args, full_argv) -> int:
    from tpubench import flags as flags_lib
    from tpubench.report import advise

    print(advise.advise(flags_lib.advise_config(args)), end="")
    return 0
