"""Machine facts, read once from the data beside this module: what a machine type carries.

Three tables, each row with the public page it was read from:

- `machines.csv`: a machine type (`gcp:n1-standard-8`, `aws:g5.xlarge`) or a
  regular family (`gcp:n1-standard-{N}`, `gcp:a3-highgpu-{N}g`) -> vCPUs, GiB
  of memory, the accelerator it carries and how many.  A family's values are
  a number or `kN` (k times the name's N), its `sizes` the Ns sold (any when
  empty); a listed type wins over its family.
- `tpu_generations.csv`: a TPU generation -> what its slice suffix counts
  (chips or TensorCores, two a chip), gcloud's accelerator-type prefix, the
  chips a slice holds on one host, the base runtime, GKE's accelerator label
  and host machine type.
- `accelerators.csv`: an accelerator's catalog name -> kind, the GCE
  accelerator type tpubench-launch attaches to a host VM, where it does, and
  GKE's node label for it.

Pricing (cost/), the study's planner and tpubench-launch all read these
here, so no fact is written twice (tests/core/test_machine_facts.py).  Pure
Python, no TensorFlow: the launcher imports it.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import importlib.resources
import re

_FAMILY_N = "{N}"


@dataclasses.dataclass(frozen=True)
class Shape:
    """One machine type: `machine` (provider:type), vCPUs, GiB, its accelerators."""

    machine: str
    vcpus: int
    gib: float
    accelerator: str  # catalog name ('h100', 'tpu-v5e'); '' when it carries none
    accelerators: int
    source: str

    @property
    def kind(self) -> str:
        """'tpu', 'gpu' or 'cpu'."""
        return _kind(self.accelerator, str(self.accelerators))


@dataclasses.dataclass(frozen=True)
class TpuGeneration:
    """A Cloud TPU generation (v2 ... v6e) as its slices are named and hosted."""

    generation: str
    suffix_counts: str  # 'chips' (tpu-v5e-8: 8 chips) or 'cores' (tpu-v4-8: 4 chips)
    accelerator_type: str  # gcloud's --accelerator-type prefix: v5litepod-8
    one_host_up_to: int  # chips a slice may have and still be one host
    chips_per_host: int  # chips a host of a larger slice holds
    runtime: str  # the base runtime a TPU VM boots
    gke_accelerator: str  # GKE's gke-tpu-accelerator label; '' where GKE has none
    gke_host: str  # GKE's host machine type; {N} is the chips one host holds
    source: str

    def hosts(self, chips: int) -> int:
        """Hosts of a slice of CHIPS chips."""
        if chips <= self.one_host_up_to:
            return 1
        return max(1, chips // self.chips_per_host)


def _rows(name: str) -> list[dict]:
    # The shipped tables: package data, not a user's file.
    text = importlib.resources.files("tpubench.core").joinpath(name).read_text(encoding="utf-8")
    return list(csv.DictReader(text.splitlines()))


def _value(text: str, n: int) -> float:
    """A table value: a number, or `kN` / `N` (k times the family member's N)."""
    if text.endswith("N"):
        return (float(text[:-1]) if text[:-1] else 1.0) * n
    return float(text)


@functools.cache
def _machine_table() -> tuple[dict[str, dict], list[tuple[re.Pattern, dict]]]:
    exact, families = {}, []
    for row in _rows("machines.csv"):
        name = row["machine"]
        if _FAMILY_N in name:
            pattern = re.escape(name).replace(re.escape(_FAMILY_N), r"(?P<n>[1-9]\d*)")
            families.append((re.compile(f"^{pattern}$"), row))
        else:
            exact[name] = row
    return exact, families


def shape(machine: str) -> Shape | None:
    """The facts of MACHINE (`gcp:a3-highgpu-8g`), or None when the tables do not know it."""
    key = machine.strip().lower()
    exact, families = _machine_table()
    n, row = 1, exact.get(key)
    if row is None:
        for pattern, family in families:
            found = pattern.match(key)
            if found and (not family["sizes"] or found["n"] in family["sizes"].split()):
                n, row = int(found["n"]), family
                break
    if row is None:
        return None
    gib = _value(row["gib"], n)
    return Shape(
        machine=key,
        vcpus=int(_value(row["vcpus"], n)),
        gib=int(gib) if gib.is_integer() else round(gib, 3),
        accelerator=row["accelerator"],
        accelerators=int(_value(row["accelerators"], n)),
        source=row["source"],
    )


def families(provider: str) -> list[str]:
    """The regular families of PROVIDER the tables know, e.g. ['n1-standard-{N}', ...]."""
    _, found = _machine_table()
    prefix = f"{provider}:"
    return [r["machine"].removeprefix(prefix) for _, r in found if r["machine"].startswith(prefix)]


def sizes(family: str) -> tuple[int, ...]:
    """The sizes (N) sold of FAMILY (`gcp:n1-standard-`): its row's `sizes`, or the Ns of
    the types listed one by one (`gcp:c4d-standard-8`); () when the tables say none."""
    exact, found = _machine_table()
    for _, row in found:
        if row["machine"] == family + _FAMILY_N and row["sizes"]:
            return tuple(int(n) for n in row["sizes"].split())
    rest = [k.removeprefix(family) for k in exact if k.startswith(family)]
    return tuple(int(n) for n in rest if n.isdigit())


def machines(provider: str) -> list[str]:
    """The single machine types of PROVIDER the tables list (not a family's members)."""
    exact, _ = _machine_table()
    return [k.removeprefix(f"{provider}:") for k in exact if k.startswith(f"{provider}:")]


def series_carrying(provider: str, kind: str) -> tuple[str, ...]:
    """The machine series of PROVIDER whose types carry KIND ('gpu', 'tpu') accelerators,
    as name prefixes: ('a2-', 'a3-', ...) for GCE's GPU machine types."""
    exact, found = _machine_table()
    rows = list(exact.values()) + [r for _, r in found]
    return tuple(
        sorted(
            {
                r["machine"].removeprefix(f"{provider}:").split("-")[0] + "-"
                for r in rows
                if r["machine"].startswith(f"{provider}:")
                and _kind(r["accelerator"], r["accelerators"]) == kind
            }
        )
    )


def _kind(accelerator: str, count: str) -> str:
    if count in ("", "0"):
        return "cpu"
    return "tpu" if accelerator.startswith("tpu-") else "gpu"


@functools.cache
def tpu_generations() -> dict[str, TpuGeneration]:
    """generation -> its facts, in the table's order (v2 first)."""
    out = {}
    for row in _rows("tpu_generations.csv"):
        ints = {k: int(row[k]) for k in ("one_host_up_to", "chips_per_host")}
        out[row["generation"]] = TpuGeneration(**{**row, **ints})
    return out


def tpu_generation(generation: str) -> TpuGeneration | None:
    return tpu_generations().get(generation)


def suffix_counting(what: str) -> tuple[str, ...]:
    """The generations whose slice suffix counts WHAT ('chips' or 'cores')."""
    return tuple(g for g, t in tpu_generations().items() if t.suffix_counts == what)


@functools.cache
def gce_accelerator_types() -> dict[str, str]:
    """Catalog accelerator name -> the GCE accelerator type attached to a host VM
    (`v100` -> `nvidia-tesla-v100`), for those tpubench-launch attaches."""
    return {r["accelerator"]: r["gce_type"] for r in _rows("accelerators.csv") if r["gce_type"]}


def gke_gpu_labels() -> tuple[str, ...]:
    """GKE's `cloud.google.com/gke-accelerator` node label values for NVIDIA GPUs."""
    return tuple(r["gke_label"] for r in _rows("accelerators.csv") if r["gke_label"])


def accelerator_kind(name: str) -> str | None:
    """'gpu' or 'tpu' for a catalog accelerator name, None when the tables do not know it."""
    if name.startswith("tpu-") and name.removeprefix("tpu-") in tpu_generations():
        return "tpu"
    kinds = {r["accelerator"]: r["kind"] for r in _rows("accelerators.csv")}
    return kinds.get(name)
