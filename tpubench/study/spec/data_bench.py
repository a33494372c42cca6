"""Study cells of `command: data_bench`: a model's input pipeline alone, as a process.

Such a cell is `tpubench data bench` over the study's prepared photos, with
`--results_dir` and `--run_label` (the cell id) so that it leaves a run
record like a train or infer cell; its rate is the record's examples/s of
the pipeline (read, decode, crop), and resume, repeats, busy-host marks and
verdicts work as for the other cells.  Nothing runs on an accelerator: a
setup gives only what the pipeline sees, the host's vCPUs (pinned cores;
tf.data sizes its thread pool from them) and an emulated disk's read rate.
"""

from __future__ import annotations

from tpubench.core import errors

COMMAND = "data_bench"
# What a part's `command:` becomes on the command line.
WORDS = {"train": ("train",), "infer": ("infer",), COMMAND: ("data", "bench")}
# The subcommand whose flags a part's flags must be.
SUBCOMMAND = {"train": "train", "infer": "infer", COMMAND: "data"}
SETUP_KEYS = ("label", "vcpus", "read_mb_per_s", "batch_size", "models")
DATA = ("jpeg", "jpeg_gs")  # a prepared directory for --data_dir


def shown(command: str) -> str:
    """`tpubench data bench`, as a user types the part's command."""
    return "tpubench " + " ".join(WORDS.get(command, (command,)))


def check_part(data: tuple, setups: list, models: tuple, where: str) -> None:
    """A data_bench part's data, setups (the raw mappings) and models.

    Raises:
      UsageError: data that is no prepared directory, or a setup or model key
        that means nothing without a model step (device, precision, memory...).
    """
    for d in data:
        if d not in DATA:
            raise errors.UsageError(
                f"{where}: data {d!r} has no prepared directory for `tpubench data bench`; "
                f"accepted: {', '.join(DATA)}"
            )
    for setup in setups:
        extra = [k for k in setup if k not in SETUP_KEYS]
        if extra:
            raise errors.UsageError(
                f"{where}.setups ({setup.get('label')}): {extra[0]} is not for command "
                f"{COMMAND} (the input pipeline alone, on the host); accepted: "
                f"{', '.join(SETUP_KEYS)}"
            )
    for item in models:
        if item.batch_per_device or item.precision:
            raise errors.UsageError(
                f"{where}.models ({item.model}): command {COMMAND} takes a model's batch_size "
                "only (no devices, no precision)"
            )


def flags(cell, results_dir: str, data_dir: str | None) -> dict:
    """The `tpubench data bench` flags of CELL, in order: model, data, setup, part, scale."""
    from tpubench.study.spec import validate

    s = cell.setup
    out: dict = {"model": cell.model.model, "data_dir": data_dir}
    if s.read_mb_per_s:  # a slower disk, emulated where the pipeline reads
        out["read_mb_per_s"] = s.read_mb_per_s
    if cell.batch():
        out["batch_size"] = cell.batch()
    out.update(cell.part.flags)
    scale = cell.part.scale[cell.scale]
    out.update({k: v for k, v in scale.items() if k not in validate.SCALE_KEYS})
    out["results_dir"] = results_dir
    out["run_label"] = cell.id
    return out
