"""Which accelerators a run used, named as the catalog names them, and what machine carries them.

A run given no `--machine` is priced as what it ran on: the device names
TensorFlow reports ("NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-16GB", "TPU
v4") become catalog accelerator ids (`h100`, `v100`, `tpu-v4`), and the run
is priced as the smallest catalog machine that carries that many of them
(one H100: gcp:a3-highgpu-1g).  Never as a CPU-only VM.

Pure Python: the detection input is the list of dicts `probe.accelerators`
records, so tests pass it as data.
"""

from __future__ import annotations

import dataclasses
import re

from tpubench.core import machine_facts
from tpubench.cost import catalog as catalog_lib
from tpubench.cost import machine as machine_lib

# (pattern on the lower-cased device name, catalog accelerator id); first match wins,
# so the more specific names come first.
GPU_IDS = (
    (r"b200", "b200"),
    (r"h200", "h200"),
    (r"h100", "h100"),
    (r"a100.*80\s*gb|a100-sxm4?-80", "a100-80gb"),
    (r"a100", "a100-40gb"),
    (r"a10g", "a10g"),
    (r"\bl4\b", "l4"),
    (r"v100", "v100"),
    (r"\bt4\b", "t4"),
    (r"p100", "p100"),
    (r"k80", "k80"),
)
TPU_IDS = (
    (r"v6\s*(e|lite)", "tpu-v6e"),
    (r"v5\s*(e|lite)", "tpu-v5e"),
    (r"v5p?\b", "tpu-v5p"),
    (r"v4", "tpu-v4"),
    (r"v3", "tpu-v3"),
    (r"v2", "tpu-v2"),
)
# Host VM for a GCP GPU sold alone (t4, v100, p100): an N1 with 4 vCPUs per GPU,
# the rule of thumb for feeding one GPU that trains image models.
VCPUS_PER_GPU = 4
# GPUs GCP attaches to N1 VMs; the others come only in their own machine types (A2, A3, G2).
N1_GPUS = ("t4", "v100", "p100", "p4", "k80")
PROVIDER_ORDER = ("gcp", "aws")


@dataclasses.dataclass(frozen=True)
class Detected:
    """The accelerators a run used: kind ('gpu' or 'tpu'), catalog id, reported name, count."""

    kind: str
    id: str | None
    name: str
    count: int

    def __str__(self) -> str:
        return f"{self.count} x {self.name}"


def accelerator_id(kind: str, device_name: str) -> str | None:
    """Maps a reported device name to a catalog accelerator id, or None if unknown.

    Examples: ('gpu', 'NVIDIA H100 80GB HBM3') -> 'h100';
    ('gpu', 'NVIDIA A100-SXM4-80GB') -> 'a100-80gb'; ('tpu', 'TPU v5 lite') -> 'tpu-v5e'.
    """
    name = device_name.lower()
    if kind == "tpu":
        name = name.split("tpu", 1)[-1]
        table = TPU_IDS
    else:
        table = GPU_IDS
    return next((ident for pattern, ident in table if re.search(pattern, name)), None)


def detect(accelerators: list[dict]) -> Detected | None:
    """Summarises `probe.accelerators` output: None for a CPU-only run.

    Mixed devices are named by the most common one (a run is one strategy over
    like devices; a stray display GPU should not decide the price).
    """
    if not accelerators:
        return None
    counts: dict[tuple[str, str], int] = {}
    for a in accelerators:
        key = (a.get("kind", "gpu"), a.get("name", "unknown"))
        counts[key] = counts.get(key, 0) + 1
    (kind, name), count = max(counts.items(), key=lambda kv: kv[1])
    return Detected(kind, accelerator_id(kind, name), name, count)


@dataclasses.dataclass(frozen=True)
class Choice:
    """A machine that carries the detected accelerators: spec, how many it carries, $/h."""

    spec: str
    carries: int
    on_demand: float

    @property
    def provider(self) -> str:
        return self.spec.split(":", 1)[0]


def candidates(cat: catalog_lib.Catalog, accel_id: str, count: int) -> list[Choice]:
    """Every current catalog machine that carries at least `count` x `accel_id`."""
    out: list[Choice] = []
    keys = cat.keys()
    for key in keys:
        rows = [r for r in cat.rows_for(key) if r.status != "historical"]
        if not rows:
            continue
        row = rows[-1]
        res = machine_lib.resolve(machine_lib.Part(1, key), cat)
        if row.kind == "instance" and res.accel_name == accel_id and res.accelerators >= count:
            out.append(Choice(key, res.accelerators, row.on_demand or row.spot or 0.0))
        elif row.kind == "gpu" and key.split(":", 1)[1] == accel_id and accel_id in N1_GPUS:
            provider = key.split(":", 1)[0]
            host = _n1_host(cat, provider, count)
            if host:
                spec = f"{host}+{count}x{key}" if count > 1 else f"{host}+{key}"
                usd = cat.lookup(host).on_demand + count * (row.on_demand or 0.0)
                out.append(Choice(spec, count, usd))
    if accel_id.startswith("tpu-"):
        out += _tpu_choices(cat, accel_id, count)
    return out


def _n1_host(cat, provider: str, gpus: int) -> str | None:
    need = VCPUS_PER_GPU * gpus
    for size in machine_facts.sizes(f"{provider}:n1-standard-"):
        key = f"{provider}:n1-standard-{size}"
        if size >= need and key in cat:
            return key
    return None


def _tpu_choices(cat, accel_id: str, chips: int) -> list[Choice]:
    gen = accel_id.removeprefix("tpu-")
    per_chip = 1 if gen in machine_facts.suffix_counting("chips") else 2
    # v2/v3 are sold by the 8-core (4-chip) slice.
    chips = max(chips, 4) if gen in ("v2", "v3") else chips
    spec = f"gcp:tpu-{gen}-{chips * per_chip}"
    try:
        res = machine_lib.resolve(machine_lib.Part(1, spec), cat)
    except Exception:  # noqa: BLE001 - no row, or not a whole slice: not a candidate
        return []
    return [Choice(spec, res.accelerators, (res.row.on_demand or 0.0) * res.units)]


def smallest(cat: catalog_lib.Catalog, accel_id: str, count: int) -> list[Choice]:
    """One machine per provider (gcp first): the fewest accelerators >= count, then cheapest."""
    by_provider: dict[str, Choice] = {}
    for c in candidates(cat, accel_id, count):
        best = by_provider.get(c.provider)
        if best is None or (c.carries, c.on_demand) < (best.carries, best.on_demand):
            by_provider[c.provider] = c
    order = {p: i for i, p in enumerate(PROVIDER_ORDER)}
    return sorted(by_provider.values(), key=lambda c: (order.get(c.provider, 99), c.provider))


def machines_for(cat: catalog_lib.Catalog, detected: Detected) -> tuple[list[str], str]:
    """(machine specs, note) that price a run on `detected`; no specs when none fits.

    The note is one line for the console and the record, e.g.
    "priced as gcp:a3-highgpu-1g, the smallest catalog machine with 1 x h100
    (ran on 1 x NVIDIA H100 80GB HBM3); also aws:p5.48xlarge (carries 8)".
    """
    if detected.id is None:
        return [], (
            f"not priced: {detected.name!r} is not an accelerator the price catalog knows; "
            "pass --machine or --price_per_hour"
        )
    choices = smallest(cat, detected.id, detected.count)
    if not choices:
        return [], (
            f"not priced: the price catalog has no current machine with {detected.count} x "
            f"{detected.id} (ran on {detected}); pass --machine or --price_per_hour"
        )
    first, rest = choices[0], choices[1:]
    note = (
        f"priced as {first.spec}, the smallest catalog machine with {detected.count} x "
        f"{detected.id} (ran on {detected})"
    )
    if first.carries > detected.count:
        note += f"; it carries {first.carries}"
    if rest:
        note += "; also " + ", ".join(
            f"{c.spec}" + (f" (carries {c.carries})" if c.carries > detected.count else "")
            for c in rest
        )
    return [c.spec for c in choices], note
