"""The tune API: plan a search for a model on this host, then run it.

    plan = api.prepare(request)         # the space, the trials' flags, the numerics guard
    result = api.search(plan, say)      # short trials, then rounds (tune/search.py)

`tpubench tune` (cli/tune.py) only turns flags into a Request and prints.
"""

from __future__ import annotations

import dataclasses

from tpubench.children import labels
from tpubench.model import registry
from tpubench.tune import guard_data, space, trials
from tpubench.tune import search as search_lib


@dataclasses.dataclass(frozen=True)
class Request:
    """What to tune: CFG (the train flags, checked), MODEL_FLAGS (the train flags given, every
    trial gets them), FIXED (the flags given: their axes stay put), and the search's own."""

    cfg: object  # core/config.TrainConfig
    model_flags: dict
    fixed: frozenset
    axes: tuple[str, ...]
    batch_sizes: tuple[int, ...]
    budget_seconds: float
    objective: str = "throughput"
    trial_steps: int = 100
    finalists: int = 2
    repeats: int = 3
    max_repeats: int = 10
    margin: float = 0.05


@dataclasses.dataclass(frozen=True)
class Plan:
    request: Request
    host: space.Host
    space: space.Space
    options: search_lib.Options
    guard: guard_data.GuardData
    tune_id: str
    records_dir: str  # where trial records go (may be gs://)
    work_dir: str  # local: model dirs and logs


def host_of(cfg) -> space.Host:
    """This host as the search sees it: CPU, GPUs or TPU; its cores and ISA; NCHW on a CPU."""
    from tpubench.hardware import probe

    cpu = probe.cpu()
    hw = cfg.hardware
    gpus = tuple(probe.gpus()) if hw.accelerator in ("auto", "gpu") else ()
    if hw.accelerator == "tpu" or hw.tpu:
        kind = "tpu"
    elif gpus:
        kind = "gpu"
    else:
        kind = "cpu"
    cores = cpu.get("affinity_cores") or cpu.get("logical_cores") or 1
    no_nchw, zentf = "", ""
    if kind == "cpu":
        from tpubench.hardware import cpu_kernels

        zentf = cpu_kernels.zentf_version() or ""
        from tpubench.hardware import cpu_layout

        answer = cpu_layout.nchw()
        no_nchw = "" if answer.ok else answer.reason
    return space.Host(kind, int(cores), tuple(cpu.get("isa") or ()), gpus, no_nchw, zentf)


def tune_id(model: str, model_flags: dict, trial_steps: int, host) -> str:
    """Same model, flags, trial length and host: the same id, so a rerun resumes."""
    parts = [model, model_flags, trial_steps, repr(host)]
    if host.zentf:  # the plug-in adds an axis: another search (and ids as before without it)
        parts.append({"zentf": host.zentf})
    return labels.stable_id(f"tune-{model}", parts, 8)


def directories(results_dir: str, the_id: str) -> tuple[str, str]:
    """(records_dir, work_dir) of tune THE_ID: records under RESULTS_DIR, work kept local."""
    records_dir = results_dir.rstrip("/") + f"/{the_id}"
    return records_dir, records_dir if "://" not in records_dir else the_id


def prepare(request: Request) -> Plan:
    """The search REQUEST asks for on this host: its space, options and numerics guard."""
    cfg = request.cfg  # its prices checked (run/train/command.check_prices)
    for module in cfg.model_modules:
        registry.load_module(module)
    spec = registry.get(cfg.model)
    host = host_of(cfg)
    the_id = tune_id(cfg.model, request.model_flags, request.trial_steps, host)
    records_dir, work_dir = directories(cfg.results_dir, the_id)
    # The plain defaults: train's own, with whatever the user fixed on the command line.
    default = space.Setting(
        batch_size=cfg.global_batch_size,
        precision=cfg.precision,
        xla=cfg.xla,
        data_format=cfg.data_format,
        intra=cfg.hardware.num_intra_threads,
        inter=cfg.hardware.num_inter_threads,
        steps_per_loop=cfg.steps_per_loop,
        cpu_kernels=cfg.hardware.cpu_kernels,
    )
    params = registry.resolve_params(spec, dict(cfg.params), tiny=cfg.tiny)
    synthetic = bool(request.model_flags.get("use_synthetic_data"))
    guard = guard_data.choose(spec, params, dict(cfg.params), cfg.data, synthetic)
    sp = space.build(
        host,
        default,
        request.axes,
        request.fixed,
        request.batch_sizes,
        bool(spec.channels_first),
        request.trial_steps,
    )
    opts = search_lib.Options(
        trial_steps=request.trial_steps,
        budget_seconds=request.budget_seconds,
        objective=request.objective,
        finalists=request.finalists,
        repeats=request.repeats,
        batch_sizes=request.batch_sizes,
        max_repeats=request.max_repeats,
        margin=request.margin,
        numerics_apart=bool(guard.flags),
        guard_data=guard.text,
    )
    return Plan(request, host, sp, opts, guard, the_id, records_dir, work_dir)


def search(plan: Plan, say) -> search_lib.Result:
    """Runs PLAN's trials (each a `tpubench train` process), SAY-ing each line; the result."""
    runner = trials.Runner(
        plan.tune_id,
        plan.request.model_flags,
        plan.records_dir,
        plan.work_dir,
        say,
        plan.guard.flags,
    )
    return search_lib.Search(plan.space, plan.host, plan.options, runner, say).run()
