"""A price only for the hardware that ran: whether a machine carries the run's accelerators.

`--machine` names the machine a run is priced as.  It must carry what the
run used: a CPU run is priced as a CPU-only VM (of any vCPU count: the rate
was measured on this host's cores, and the README says so), an accelerator
run as a machine that carries at least as many of the same accelerator (a
whole machine is rented even when the run used part of it).  Any other
machine is a what-if the user names as one (`--price_as`): its rows carry
`what_if` and every table marks them "not measured there".

Pure Python: the run's devices come as `detect.Detected` (None for a CPU
run), the host's facts before TensorFlow loads as plain arguments.
"""

from __future__ import annotations

from tpubench.cost import catalog as catalog_lib
from tpubench.cost import detect
from tpubench.cost import machine as machine_lib

MARK = "not measured there"
FOOTNOTE = f"* {MARK}: a what-if (--price_as); the rate was measured on other hardware"


def _carried(spec: str, cat: catalog_lib.Catalog) -> machine_lib.Accelerators:
    return machine_lib.parse(spec).accelerators(cat)


def _refusal(spec: str, carried: machine_lib.Accelerators, ran: str) -> str:
    return (
        f"--machine={spec} carries {carried}, but this run {ran}: a run is priced only as "
        f"hardware like what ran; to price it as {spec} anyway, name it as a what-if: "
        f"--price_as={spec}"
    )


def mismatch(spec: str, cat: catalog_lib.Catalog, ran: detect.Detected | None) -> str | None:
    """One line refusing SPEC for a run that used RAN (None: CPU only); None when it fits."""
    carried = _carried(spec, cat)
    if ran is None:
        return _refusal(spec, carried, "used no accelerator") if carried.count else None
    used = f"used {ran}" + (f" ({ran.id})" if ran.id else "")
    if not carried.count or carried.kind != ran.kind:
        return _refusal(spec, carried, used)
    if ran.id and ran.id not in carried.name.split("+"):
        return _refusal(spec, carried, used)
    if carried.count < ran.count:
        return _refusal(spec, carried, used)
    return None


def before_devices(
    spec: str,
    cat: catalog_lib.Catalog,
    *,
    accelerator: str,
    tpu: str | None,
    no_gpu: str | None,
    tpu_host: bool,
) -> str | None:
    """The refusal of SPEC decidable before TensorFlow loads; None when only the devices can tell.

    ACCELERATOR is --accelerator (auto, cpu, gpu, tpu), TPU --tpu, NO_GPU why
    no GPU can be seen here (placement.no_gpu_reason), TPU_HOST whether TPU
    devices are in /dev.
    """
    carried = _carried(spec, cat)
    if carried.kind == "gpu" and (accelerator in ("cpu", "tpu") or no_gpu):
        why = f"--accelerator={accelerator}" if accelerator in ("cpu", "tpu") else no_gpu
        return _refusal(spec, carried, f"will use no GPU: {why}")
    if carried.kind == "tpu" and (
        accelerator in ("cpu", "gpu") or (accelerator == "auto" and not tpu and not tpu_host)
    ):
        why = f"--accelerator={accelerator}" if accelerator != "auto" else "no TPU here, no --tpu"
        return _refusal(spec, carried, f"will use no TPU: {why}")
    if not carried.count and accelerator in ("gpu", "tpu"):
        return _refusal(spec, carried, f"will use a {accelerator.upper()} (--accelerator)")
    return None


def not_measured(rows, accelerators) -> set[str]:
    """Names of a record's cost rows not measured there: what-ifs, and (older records)
    accelerator machines priced from a CPU run.

    ROWS are the record's cost.machines (MachineCost), ACCELERATORS its
    hardware.accelerators (None where the record has none: only what-ifs are known).
    """
    cpu_run = accelerators is not None and not accelerators
    out = set()
    for row in rows:
        n = row.num_accelerators
        if row.raw.get("what_if") or (cpu_run and isinstance(n, int) and n > 0):
            out.add(row.machine or "")
    return out


def marked(name: str, what_if: bool) -> str:
    """NAME as tables show it: a what-if's with its mark (FOOTNOTE says what it means)."""
    return f"{name} *" if what_if else name
