"""What a train run's record says of it, section by section, as the run gets there.

`planned`: once the session has resolved the run (the xla it resolved, the
model, placement, data and hardware sections) and the prices of what runs;
`built`: the network and optimizer as built; `measured`: the results, MFU
and cost once the loops have ended.  The `Job` (job.py) calls each at its
point and keeps no record-writing of its own.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from tpubench.core.config import TrainConfig
from tpubench.cost import runs as cost_runs
from tpubench.hardware import central_storage
from tpubench.run import efficiency, session
from tpubench.run.train import planning

if TYPE_CHECKING:
    from tpubench.run.runner import Runner
    from tpubench.run.train.controller import LoopResult
    from tpubench.run.train.profile import Profile


@dataclasses.dataclass(frozen=True)
class Ended:
    """What the loops left: the controller's result, the host CPU samples, the profiler."""

    result: LoopResult
    host_cpu: dict
    profile: Profile | None
    runner: Runner


def planned(record: dict, cfg: TrainConfig, p: planning.Plan) -> cost_runs.Prices:
    """The record's sections known from the plan; the prices of what runs."""
    # What ran: an unset --xla is resolved by the plan.  (A run inside a run, such
    # as --compare_synthetic's, starts from an empty record with no config.)
    record.setdefault("config", {})["xla"] = p.xla
    if p.xla_reason:
        record["xla_default"] = p.xla_reason
    record.update(planning.describe(p))
    record.update(session.probe(p.placement, cfg.precision))
    # Price what ran: with no --machine, the probed accelerators choose the machine.
    hardware = record["hardware"]
    return cost_runs.prices(cfg.cost, hardware["accelerators"], hardware.get("cpu"))


def built(record: dict, cfg: TrainConfig, p: planning.Plan, runner: Runner, warn) -> None:
    """The optimizer, weight copies, variable placement and XLA scope as RUNNER built them;
    WARN(line) for each random layer that repeats across replicas."""
    from tpubench.model import optimizer_choice, randomness

    model = record["model"]
    model["optimizer"] = optimizer_choice.describe(cfg.optimizer, runner.optimizer)
    model["bf16_weight_copies"] = len(runner.bf16_copies)  # model/weight_copy.py
    record["placement"] |= central_storage.recorded(p.placement, runner.model)
    for line in randomness.repeats(runner.model):  # as built: model/randomness.py
        warn(f"{p.spec.name}: {line}")
    if runner.xla_scope:  # what --xla compiled: the whole step, or each replica's pass
        record["xla_scope"] = runner.xla_scope


def measured(
    record: dict, cfg: TrainConfig, p: planning.Plan, ended: Ended, prices: cost_runs.Prices
) -> dict:
    """The record's results, recurrent, MFU and cost sections; returns the results."""
    from tpubench.run.train import loop

    record["results"] = results = loop.results(cfg, p, ended.result, ended.host_cpu)
    if ended.profile is not None:
        results["profile"] = ended.profile.section()
    rnn = efficiency.recurrent(ended.runner, p.placement.accelerator)
    if rnn is not None:
        record["recurrent"] = rnn
    record["mfu"] = planning.mfu_section(cfg, p, results)
    record["cost"] = planning.cost_section(p, results, prices)
    return results
