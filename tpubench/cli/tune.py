"""`tpubench tune`: the fastest and the cheapest settings for a model on this hardware.

Takes every `tpubench train` flag (they fix what they set and go to every
trial) plus the search's own.  Each trial is a `tpubench train` process
(tpubench/tune/trials.py); the search is tpubench/tune/search.py.
"""

from __future__ import annotations

from absl import flags

from tpubench.cli import argv_checks, configs, model_memory, tune_serving, tune_text, values
from tpubench.cli import train as train_cli
from tpubench.core import basis, columns, errors, safe_text
from tpubench.data import manifest
from tpubench.hardware import placement
from tpubench.model import shipped
from tpubench.storage import files
from tpubench.tune import space

FLAGS = flags.FLAGS
# Flags tune sets for every trial: user values would break resume or the guard.
OWNED = ("results_dir", "model_dir", "run_label", "train_steps", "train_epochs")
_train_flags: set[str] = set()


def define():
    before = set(FLAGS)
    train_cli.define()
    _train_flags.update(set(FLAGS) - before)
    model_memory.define_trust_code()
    # Tune measures the compute settings: synthetic batches unless asked otherwise.
    FLAGS.set_default("use_synthetic_data", True)
    f = flags
    f.DEFINE_enum(
        "objective",
        "throughput",
        ["throughput", "cost", "serving"],
        "What the winner is best at: training throughput, training $/epoch, or serving (the "
        "most queries/sec LoadGen's Server scenario judges VALID at --latency_bound: infer "
        "batch size and batching window).",
    )
    f.DEFINE_string(
        "budget", "30m", "Wall time the trials may take, e.g. 10m, 1h30m (the defaults always run)."
    )
    f.DEFINE_list(
        "batch_sizes",
        [],
        "Global batch sizes to try, e.g. 64,128,256 (default: the model's default batch and its "
        "doublings, 4x on CPU, 8x on accelerators); larger ones stop at the first out-of-memory.",
    )
    f.DEFINE_list(
        "search",
        list(space.AXES),
        "The axes to search (always in this order); a train flag given on the command line "
        "fixes its axis.",
    )
    f.DEFINE_integer(
        "trial_steps", 100, "Steps of a short trial; longer runs take 3x as many.", lower_bound=10
    )
    f.DEFINE_integer(
        "finalists",
        2,
        "Settings that get a longer run after the short round (the two best of them go on "
        "to the rounds).",
        lower_bound=1,
    )
    tune_serving.define()
    f.DEFINE_integer(
        "repeats",
        3,
        "Rounds at least (one longer run of each leader and the defaults each), budget allowing: "
        "the first look at the leaders' interval comes after this round.",
        lower_bound=1,
    )
    f.DEFINE_integer(
        "max_repeats",
        10,
        "Rounds at most: they stop sooner once the leaders' interval excludes 1 or lies inside "
        "--equivalence_margin.  One look after each round from --repeats to this (or the last "
        "the budget holds), together at 95%.",
        lower_bound=1,
    )
    f.DEFINE_float(
        "equivalence_margin",
        5.0,
        "Percent: the two leaders are 'equivalent' once their 95% interval lies inside +/- this "
        "(the rounds then stop); an interval that holds 1 and reaches beyond it is 'not settled'.",
        lower_bound=0.1,
        upper_bound=50.0,
    )


def main(args: list[str], full_argv: list[str]) -> int:
    from tpubench.tune import api

    argv_checks.no_positional(args, "tune")
    budget = values.parse_duration(FLAGS.budget, "--budget")
    batch_sizes = tuple(sorted(values.parse_batch_sizes(FLAGS.batch_sizes, "--batch_sizes")))
    axes = _axes(FLAGS.search)
    if FLAGS["model_dir"].present:  # the model trained there; trials get their own dirs
        if not model_memory.apply("tune"):
            raise errors.UsageError(
                f"--model_dir={safe_text.shown(FLAGS.model_dir)} holds no model.json (the model a "
                "tpubench train run trained there); tune reads only that model from a model_dir"
            )
        FLAGS["model_dir"].value, FLAGS["model_dir"].present = None, 0
    shipped.check_known(FLAGS.model, tuple(FLAGS.model_module))  # before TensorFlow loads
    fixed = frozenset(n for n in _train_flags if FLAGS[n].present)
    for name in sorted(fixed & set(OWNED) - {"results_dir"}):
        raise errors.UsageError(
            f"--{name} is set by tune for each trial; accepted: leave it out (--trial_steps "
            "sets the length of a short trial)"
        )
    if "per_replica_batch_size" in fixed:  # the batch axis is global; one spelling of it
        raise errors.UsageError(
            f"--per_replica_batch_size={FLAGS.per_replica_batch_size}: tune searches global batch "
            "sizes; accepted: --batch_size=N (global, fixes the axis) or --batch_sizes"
        )
    if batch_sizes and "batch_size" in fixed:
        raise errors.UsageError("--batch_sizes and --batch_size both given; give one of them")
    if FLAGS.max_repeats < FLAGS.repeats:
        raise errors.UsageError(
            f"--max_repeats={FLAGS.max_repeats} is below --repeats={FLAGS.repeats}; "
            "accepted: --max_repeats at least --repeats"
        )
    from tpubench.run import session
    from tpubench.run.train import command as train_lib

    cfg = configs.train_config()  # every train flag checked before the first trial
    # As train refuses them, before TensorFlow and before a trial's folder (docs/security.md).
    placement.check_tpu(cfg.hardware.accelerator, cfg.hardware.tpu)
    manifest.check_local(cfg.data.data_dir)
    files.check_writable_dir(cfg.results_dir, "--results_dir")
    session.check_machine(cfg)
    train_lib.check_prices(cfg)
    model_flags = {
        n: FLAGS[n].value
        for n in sorted(_train_flags)
        if (FLAGS[n].present or n == "use_synthetic_data") and n not in OWNED
    }
    if FLAGS.objective == "serving":
        return _serving(cfg, model_flags, batch_sizes, budget)
    request = api.Request(
        cfg,
        model_flags,
        fixed,
        axes,
        batch_sizes,
        budget,
        objective=FLAGS.objective,
        trial_steps=FLAGS.trial_steps,
        finalists=FLAGS.finalists,
        repeats=FLAGS.repeats,
        max_repeats=FLAGS.max_repeats,
        margin=FLAGS.equivalence_margin / 100.0,
    )
    plan = api.prepare(request)
    _say(tune_text.header(cfg.model, plan.host, plan.space, plan.options, plan.records_dir))
    _say(f"numerics checked against fp32 on {plan.guard.text}")
    result = api.search(plan, _say)
    tune_text.finish(
        result,
        plan.space,
        plan.options,
        model_flags,
        plan.work_dir,
        plan.records_dir,
        plan.host,
        _say,
        basis.parse(FLAGS.pricing),
    )
    return 0


def _serving(cfg, model_flags: dict, batch_sizes: tuple, budget: float) -> int:
    """--objective=serving: batch size and batching window under LoadGen's Server scenario."""
    from tpubench.model import registry
    from tpubench.tune import api

    for module in cfg.model_modules:
        registry.load_module(module)
    registry.get(cfg.model)
    host = api.host_of(cfg)
    sopts = tune_serving.options(batch_sizes, budget)
    model_flags = tune_serving.infer_flags(model_flags)
    the_id = api.tune_id(cfg.model, model_flags, FLAGS.trial_steps, host)
    records_dir, work_dir = api.directories(cfg.results_dir, the_id)
    return tune_serving.run(
        cfg.model, host, sopts, model_flags, the_id, records_dir, work_dir, _say
    )


def _say(line: str) -> None:
    # Trial records are read back and shown: through the one sanitiser.
    print(columns.fold(safe_text.block(line)), flush=True)  # within 100 columns, paths whole


def _axes(items: list[str]) -> tuple[str, ...]:
    if not items:
        raise errors.UsageError(f"--search is empty; accepted: {', '.join(space.AXES)}")
    for item in items:
        if item not in space.AXES:
            raise errors.unknown("axis in --search", item, space.AXES)
    return tuple(items)
