"""The one list of subcommands: name, module, one-line help, whether TensorFlow loads.

Each subcommand is a module of this package with `define()` (its flags) and
`main(args, full_argv) -> int`.  main.py prints this list as the usage,
flags.py defines the chosen one's flags, and the dispatcher calls its main.
"""

from __future__ import annotations

import dataclasses
import importlib
import types


@dataclasses.dataclass(frozen=True)
class Subcommand:
    name: str
    help: str
    loads_tensorflow: bool  # its C++ log is kept off the console unless --verbose
    module_name: str = ""  # tpubench.cli.<module_name>; default: the name

    @property
    def module(self) -> types.ModuleType:
        return importlib.import_module(f"tpubench.cli.{self.module_name or self.name}")


SUBCOMMANDS = (
    Subcommand("train", "train a model and record throughput, accuracy, MFU and cost", True),
    Subcommand(
        "infer", "measure prediction throughput, latency and $ per million predictions", True
    ),
    Subcommand(
        "tune",
        "search precision, XLA, layout, threads, steps per loop and batch size for the fastest "
        "or cheapest run of a model here; writes a flag file for train",
        True,
    ),
    Subcommand("models", "list registered models with parameters and FLOPs per example", True),
    Subcommand(
        "prices",
        "list or search the price catalog, price a --machine, or import SkyPilot files",
        False,
    ),
    Subcommand("peak", "show (or --reprobe) the peak FLOP/s that MFU is measured against", True),
    Subcommand(
        "rerun",
        "repeat a recorded train or infer run with the same flags: tpubench rerun RECORD.json",
        False,
    ),
    Subcommand(
        "data",
        "prepare, list, bench or check datasets: tpubench data prepare|list|bench|check",
        True,
    ),
    Subcommand(
        "runs", "list run records under directories or gs:// prefixes: tpubench runs DIR...", False
    ),
    Subcommand(
        "report", "compare runs: tables, charts and an HTML page from records or directories", False
    ),
    Subcommand(
        "advise",
        "cheapest configuration for a deadline (or fastest for a budget) from records",
        False,
    ),
    Subcommand(
        "study",
        "rerun a published comparison from its study file: tpubench study list|run|report",
        False,
    ),
)
BY_NAME = {s.name: s for s in SUBCOMMANDS}
