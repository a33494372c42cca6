"""`tpubench study run NAME --executor=EXECUTOR --cloud=FILE`: cells on rented machines.

The study does not talk to the cloud itself: it writes the cells it can run
there as a tpubench-launch sweep file with `runs:` (one run per repeat of a
cell, as many as a local study runs; each records the cell id as its
run_label, and its flags are the cell's less what the launcher owns) and
runs `tpubench-launch sweep FILE --executor=...` as a process.  The
launcher rents, runs, copies the records back into the study's results
directory and always deletes what it created; the study's resume and report
then work as for local cells (a record's run_label is its cell id).

The --cloud file is the sweep's `cloud:` mapping plus `machines:`, setup
label -> machine to rent (default: the setup's own `machine:`).  Which cells
an executor can host is what it declares (study/run/executors.py: the devices,
the TPU slices and their generations, and the subcommands it hosts; auto is
the GPU when the machine has one), on a machine with the GPUs or the TPU
slice the cell needs, so that the plan never offers a cell the launcher
would refuse.  A remote cell is not pinned
with taskset (the machine has the vCPUs; the thread flags stay), reads
`jpeg` data from --gcs_data, and a parameter-server setup runs as it does
here, a local cluster on its one machine, where the executor declares such
clusters (`one_machine: true` in the sweep file's run).
"""

from __future__ import annotations

import dataclasses
import os
import sys

from tpubench.children import command, process
from tpubench.core import (
    code_flags,
    errors,
    host_procs,
    hosting,
    machine_facts,
    safe_yaml,
    tpu_slices,
)
from tpubench.cost import catalog
from tpubench.cost import machine as machines
from tpubench.storage import files
from tpubench.study.run import cells as cells_lib
from tpubench.study.run import executors, plan
from tpubench.study.spec import spec

# Not tpubench flags on a rented machine: the launcher places records, model
# dirs and labels; the run's machine is what is rented; the executor names the TPU.
LAUNCHER_OWNS = ("results_dir", "model_dir", "run_label", "machine", "tpu")


@dataclasses.dataclass(frozen=True)
class Cloud:
    path: str
    settings: dict  # the sweep file's cloud: mapping
    machines: dict  # setup label -> machine


def load_cloud(path: str, executor: str, trust_code: bool = False) -> Cloud:
    """Reads a --cloud file.

    Raises:
      UsageError: unreadable, not a mapping, an unknown key, machines not a
        mapping of setup labels to machine names, a required key missing,
        or a key that chooses code (the package each VM installs, a
        container or boot image: the launcher's list) unless TRUST_CODE.
    """
    doc = spec.read_yaml(path, "--cloud file", refused_prefix=f"--cloud={path}: ")
    if not isinstance(doc, dict):
        raise errors.UsageError(f"--cloud={path}: a mapping of cloud settings and machines:")
    # The launcher's one answer, asked with this file (study/run/executors.py): what each
    # executor reads, needs and counts as code, and the file's first value it refuses.
    declared = executors.get(executor, path)
    # Its keys and formats: the launcher's one cloud-file checker (launch/cloud_file.py).
    problem = executors.problem(executor, path)
    if problem:
        raise errors.UsageError(problem)
    found = doc.get("machines") or {}
    if not isinstance(found, dict) or not all(
        isinstance(v, str) and v.strip() for v in found.values()
    ):
        raise errors.UsageError(
            f"--cloud={path}: machines must map setup labels to machines, e.g. "
            "machines: {'1 GPU': 'gcp:n1-standard-8+1xgcp:t4'}"
        )
    missing = [k for k in declared.required if not doc.get(k)]
    if missing:
        raise errors.UsageError(
            f"--cloud={path}: --executor={executor} needs {', '.join(missing)} "
            f"(e.g. {declared.example or 'bucket: gs://B'})"
        )
    settings = {k: v for k, v in doc.items() if k != "machines"}
    used = executors.settings_for(executor, settings, path)
    for line in code_flags.check_settings(
        f"--cloud={path}", "", used, declared.code_keys, trust_code
    ):
        print(line, file=sys.stderr, flush=True)
    return Cloud(path, settings, {str(k): v.strip() for k, v in found.items()})


def machine_of(cell, cloud: Cloud) -> str | None:
    return cloud.machines.get(cell.setup.label) or cell.setup.machine


def shape(machine: str, where: str) -> tuple[str, int, str, int | None]:
    """(cpu | gpu | tpu, accelerator count, accelerator name, vCPUs or None) of MACHINE."""
    try:
        acc = machines.parse(machine).accelerators(catalog.load())
    except errors.TpubenchError as e:
        raise errors.UsageError(f"{where}: machine {machine!r}: {errors.one_line(e)}") from None
    kind = acc.kind if acc.kind in ("gpu", "tpu") else "cpu"
    # The host's vCPUs are a machine fact (core/machines.csv); None where not known.
    facts = machine_facts.shape(machine.split("+")[0].split("@")[0])
    vcpus = facts.vcpus if facts and kind != "tpu" else None
    return kind, acc.count, acc.name, vcpus


def needs(cell, executor: str, cloud: Cloud, gcs_data: str | None) -> str | None:
    """None when EXECUTOR can run CELL on the machine --cloud gives it, else what it needs:
    what the executor declares it hosts goes through the launcher's own check
    (tpubench/core/hosting.py), so the plan never offers a cell the launcher refuses."""
    s, declared = cell.setup, executors.get(executor, cloud.path)
    if cell.part.command == "data_bench":  # the input pipeline of this host
        return "needs this host: `data_bench` cells run locally (--executor=local)"
    rent = machine_of(cell, cloud)
    if not rent:
        return f"needs a machine for setup '{s.label}' in the --cloud file's machines:"
    kind, count, name, vcpus = shape(rent, f"--cloud={cloud.path}")
    device = s.device if s.device != "auto" else ("gpu" if kind == "gpu" else "cpu")
    if device == "tpu" and kind != "tpu":
        return f"needs a TPU slice machine (gcp:tpu-...); {rent} is not one"
    if device != "tpu" and kind == "tpu":
        return f"runs on {device}; {rent} is a TPU slice"
    generation = name.removeprefix("tpu-") if device == "tpu" else None
    need = hosting.Need(
        subcommand=cell.part.command,
        device=device,
        machine=rent,
        provider=hosting.provider_of(rent),
        tpu_generation=generation,
        tpu_hosts=tpu_slices.hosts(generation, count) if generation else 1,
        # A cell is one machine, as the seeds ran their parameter servers beside the GPUs.
        cluster=s.strategy if cell.cluster() else None,
        one_machine=bool(cell.cluster()),
    )
    everyone = [dataclasses.asdict(x) for x in executors.renting(cloud.path)]
    refused = hosting.refusal(dataclasses.asdict(declared), need, everyone)
    if refused:
        return refused
    if device == "gpu" and count < s.devices:
        return f"needs {s.devices} GPU(s); {rent} has {count}"
    if cell.cluster() and device == "gpu" and s.variables == "gpu" and count < s.devices + 1:
        return f"needs {s.devices + 1} GPU(s) (one for the parameter server); {rent} has {count}"
    if s.vcpus and vcpus and s.vcpus > vcpus:
        return f"needs {s.vcpus} vCPUs; {rent} has {vcpus}"
    room = host_procs.fit(s.vcpus or vcpus, None, rent) if vcpus else None
    if cell.cluster() and room and s.devices + 2 > room.most:  # every task on the one machine
        return f"needs {s.devices + 2} processes at once; {rent} holds {room.most} ({room.why()})"
    if cell.data in ("jpeg", "jpeg_gs") and not gcs_data:
        return (
            "needs the photos on gs:// (--gcs_data=gs://BUCKET/PATH): a rented machine cannot "
            "read this host's prepared copy"
        )
    return None


def remote_host(machine: str, gcs_data: str | None, where: str) -> cells_lib.Host:
    """The rented (or planned-for) machine as a Host, so a cell's flags and what it needs
    are computed for it (a TPU slice's host vCPUs are not known: counted as 1)."""
    kind, count, name, vcpus = shape(machine, where)
    cores = tuple(range(vcpus or 1))
    gpus = count if kind == "gpu" else 0
    return cells_lib.Host(cores, gpus, name if gpus else "", kind == "tpu", gcs_data, machine)


def make_plan(study, scale: str, executor: str, cloud: Cloud, gcs_data, results_dir):
    """The study's cells with what EXECUTOR cannot run (plan.Plan, as for local runs)."""
    cells = cells_lib.expand(study, scale)
    blocked = {}
    for c in cells:
        why = needs(c, executor, cloud, gcs_data)
        if why:
            blocked[c.id] = why
    repeats = study.runs_per_cell(scale)  # as many runs per cell as a local study
    return plan.counted(cells, blocked, repeats, results_dir)


def header(study, p, scale: str, executor: str, cloud: Cloud, results_dir: str) -> list[str]:
    runs = sum(n for _, n in p.todo_runs())
    each = f" ({runs} run(s): {p.repeats} per cell, for an interval)" if p.repeats > 1 else ""
    lines = [
        f"study {study.name}: {len(p.cells)} cell(s) at --scale={scale}; --executor={executor} "
        f"with the machines of {cloud.path} can run {p.runnable}; {len(p.done)} already recorded "
        f"in {results_dir}; {len(p.todo)} to run{each}"
    ]
    return (
        lines
        + [f"  not runnable on {executor}: {x}" for x in plan.blocked_lines(p.cells, p.blocked)]
        + [f"  {line}" for line in p.left_out]
    )


def run_entry(cell, cloud: Cloud, gcs_data: str | None, repeat: int = 1, repeats: int = 1) -> dict:
    """One `runs:` entry: the cell's id, machine, command, estimate and flags.

    A cell run REPEATS times is that many entries: each its own label (its
    model dir, VM and log on the launcher's side), all recording the cell id
    as their run_label, so the launcher resumes by counting that label's
    records, as a local study does.
    """
    rent = machine_of(cell, cloud)
    host = remote_host(rent, gcs_data, f"--cloud={cloud.path}")
    flags = cell.flags(host, "", gcs_data)  # `jpeg` reads the gs:// copy there
    label = cell.id if repeats == 1 else f"{cell.id}.r{repeat}"
    entry = {"label": label, "run_label": cell.id, "machine": rent, "command": cell.part.command}
    seconds = cell.part.scale[cell.scale].get("seconds")
    if seconds:
        entry["seconds"] = seconds
    entry["flags"] = {k: v for k, v in flags.items() if k not in LAUNCHER_OWNS}
    if cell.cluster():  # every task on the rented machine, as the cell runs here
        entry.update(strategy=entry["flags"].pop("strategy"), one_machine=True)
        entry.update(cell.cluster_shape(host))
    return entry


def write_sweep(study, p, executor: str, cloud: Cloud, gcs_data, results_dir: str) -> str:
    """RESULTS_DIR/launch/EXECUTOR.yaml: every cell EXECUTOR can run (recorded ones too:
    the launcher skips them and shows them as done)."""

    runnable = [c for c in p.cells if c.id not in p.blocked]
    doc = {
        "name": f"study-{study.name}",
        "results_dir": results_dir,
        "runs": [
            run_entry(c, cloud, gcs_data, k, p.repeats)
            for c in runnable
            for k in range(1, p.repeats + 1)
        ],
        # One --cloud file serves every executor: GKE's keys go to gke only.
        "cloud": executors.settings_for(executor, cloud.settings, cloud.path),
    }
    path = os.path.join(results_dir, "launch", f"{executor}.yaml")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    head = f"# written by `tpubench study run {study.name} --executor={executor}` (each run)\n"
    files.write_atomic(path, head + safe_yaml.dumps(doc))
    return path


def launch(path: str, executor: str, dry_run: bool, out, trust_code: bool = False) -> int:
    """Runs tpubench-launch on the sweep file, its output streamed; returns its exit code.

    SIGINT/SIGTERM are passed on to it (it deletes what it created, then exits 130).
    """
    argv = command.python_argv("tpubench_launch.main", "sweep", path, f"--executor={executor}")
    if dry_run:
        argv.append("--dry-run")
    if trust_code:  # the user read the study's code; the sweep file it becomes names it too
        argv.append("--trust-code")
    print("$ tpubench-launch " + " ".join(argv[4:]), file=out, flush=True)
    with process.StopRequests() as sig:
        return process.run(argv, None, sig, env=command.child_env(), grace=None, relay=True)
