"""SkyPilot-format `vms.csv` files read as catalog rows (`tpubench prices import`, `diff`).

SkyPilot's catalogs (skypilot-org/skypilot-catalog, `catalogs/v7/gcp/vms.csv`
to `catalogs/v9/...`; schemas v7, v8 and v9 share these columns) list one row
per instance type and zone, with columns named in the header (the order
differs by cloud): `InstanceType, AcceleratorName, AcceleratorCount, vCPUs,
MemoryGiB, GpuInfo, Price, SpotPrice, Region, AvailabilityZone`.  What they
mean here:

- AWS rows are whole instances: `aws:<InstanceType>`, carrying
  `AcceleratorCount x AcceleratorName`.
- GCP instance rows are the VM alone; GPUs are separate rows with an empty
  InstanceType (`,,,H100,1,...`) and TPUs are rows named `tpu-v5e-8`.  A2/A3
  and G2 machines are priced here as their VM plus the GPUs they come with;
  T4/V100/P100/P4/K80 become per-GPU rows (add an N1 host), TPUs per-chip rows
  (v2/v3 per 8-core slice).  A machine whose VM row is 0.0 (v9's A4, B200)
  is priced by its GPU row alone: that row carries the whole machine.
  `-lssd`/`-nolssd` variants carry the GPUs of their base type.
- A price of 700.0 means "not offered in this zone"; the lowest spot price
  over a region's zones is kept.
- A spot price above its on-demand price (v9 lists A100-80GB x1 and H100 x8
  so) is no discount: the row keeps no spot price, and `spot_refused` says
  why, so every spot answer on it is refused in one line (`pricing.hourly`).

Rows are taken from one region per cloud (us-central1, us-east-1, like the
shipped catalog) and dated by the caller; `skypilot_import` writes them to
the user catalog.  Pure Python.
"""

from __future__ import annotations

import csv
import datetime
import io
import re

from tpubench.core import errors, machine_facts, money
from tpubench.cost import catalog_rows, detect

REQUIRED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "SpotPrice", "Region")
REGIONS = {"gcp": "us-central1", "aws": "us-east-1"}
NOT_OFFERED = 700.0
MAX_FILE_BYTES = 64 << 20  # SkyPilot's largest vms.csv (AWS, every zone) is a few MB
# GCP machine types sold with their GPUs: family prefix -> SkyPilot GPU name.
GCP_BUNDLES = {
    "a2-highgpu-": "A100",
    "a2-megagpu-": "A100",
    "a2-ultragpu-": "A100-80GB",
    "a3-edgegpu-": "H100",
    "a3-highgpu-": "H100",
    "a3-megagpu-": "H100-MEGA",
    "a3-ultragpu-": "H200",
    "a4-highgpu-": "B200",
    "g2-standard-": "L4",
}
GCP_SOLO_GPUS = ("T4", "V100", "P100", "P4", "K80")


def _price(text: str) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return None if value <= 0 or value >= NOT_OFFERED else value


def _cloud(header: list[str], rows: list[dict], name: str) -> str:
    zones = [r.get("AvailabilityZone", "") for r in rows[:50]]
    if any(re.search(r"-az\d+$", z) for z in zones):
        return "aws"
    if any(re.search(r"-[a-z]$", z) for z in zones) or "GpuInfo" not in header[:6]:
        return "gcp"
    raise errors.PriceError(f"{name}: cannot tell whether it is GCP's or AWS's catalog")


def read(text: str, name: str, as_of: datetime.date, commit: str = "") -> list[catalog_rows.Row]:
    """Turns one SkyPilot-format vms.csv into catalog rows (see the module docstring).

    Args:
      text: the file's text; name: how messages and each row's source name it;
      as_of: the rows' date; commit: the snapshot's git commit ('' if not known).

    Raises:
      PriceError: a missing column, or no row in the region tpubench prices.
    """
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff"), newline=""))
    header = [h.strip() for h in reader.fieldnames or []]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise errors.PriceError(
            f"{name}: not a SkyPilot vms.csv: missing column(s) {', '.join(missing)} "
            f"(expected a header with {', '.join(REQUIRED)})"
        )
    rows = [{k.strip(): (v or "").strip() for k, v in r.items() if k} for r in reader]
    cloud = _cloud(header, rows, name)
    region = REGIONS[cloud]
    here = [r for r in rows if r["Region"] == region]
    if not here:
        raise errors.PriceError(f"{name}: no {cloud} rows in region {region}")
    at = f" at commit {commit[:12]}" if commit else ""
    source = f"{name} (SkyPilot-format {cloud} catalog{at}, imported)"
    out = _aws(here, source, as_of) if cloud == "aws" else _gcp(here, source, as_of)
    if not out:
        raise errors.PriceError(f"{name}: no priced rows in region {region}")
    return out


def _best(rows: list[dict]) -> tuple[float | None, float | None]:
    """(on-demand, lowest spot) over the zones of one item; None where not offered."""
    ods = [p for p in (_price(r["Price"]) for r in rows) if p is not None]
    spots = [p for p in (_price(r["SpotPrice"]) for r in rows) if p is not None]
    return (min(ods) if ods else None), (min(spots) if spots else None)


def _group(rows: list[dict], *fields: str) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        out.setdefault(tuple(r[f] for f in fields), []).append(r)
    return out


def _above(od: float | None, spot: float | None, what: str) -> str:
    """Why SPOT is no price to answer with ('' when it is one): it is above on demand."""
    if od is None or spot is None or spot <= od:
        return ""
    return f"spot {money.exact(spot)} above on demand {money.exact(od)} (SkyPilot, {what})"


def _row(key, kind, region, unit, count, od, spot, as_of, source, notes, refused=""):
    if refused:
        spot = None
    return catalog_rows.Row(
        key=key.lower(),
        provider=key.split(":", 1)[0],
        kind=kind,
        region=region,
        unit=unit,
        count=count,
        on_demand=None if od is None else round(od, 6),
        spot=None if spot is None else round(spot, 6),
        as_of=as_of,
        source=source,
        status="confirmed",
        notes=notes,
        spot_refused=refused,
    )


def _count(text: str) -> int:
    try:
        return int(float(text or 0))
    except ValueError:
        return 0


def _aws(rows, source, as_of):
    out = []
    for (itype,), group in sorted(_group(rows, "InstanceType").items()):
        if not itype:
            continue
        od, spot = _best(group)
        if od is None and spot is None:
            continue
        first = group[0]
        n = _count(first["AcceleratorCount"])
        accel = detect.accelerator_id("gpu", first["AcceleratorName"]) if n else None
        notes = f"accel={accel}; " if accel else ""
        notes += f"{first.get('vCPUs', '?')} vCPU / {first.get('MemoryGiB', '?')} GiB"
        if n and not accel:
            notes += f"; {n}x {first['AcceleratorName']} (not an accelerator tpubench knows)"
            n = 0
        refused = _above(od, spot, f"{itype} in {first['Region']}")
        out.append(_row(f"aws:{itype}", "instance", first["Region"], "instance-hour", n, od,
                        spot, as_of, source, notes, refused))  # fmt: skip
    return out


def _gcp(rows, source, as_of):
    hosts = {k[0]: v for k, v in _group(rows, "InstanceType").items() if k[0]}
    accel_rows = _group([r for r in rows if not r["InstanceType"]], "AcceleratorName")
    gpus = {}
    for (name,), group in accel_rows.items():
        for (n,), by_count in _group(group, "AcceleratorCount").items():
            gpus[name, _count(n)] = _best(by_count)
    region = rows[0]["Region"]
    out = []
    for itype, group in sorted(hosts.items()):
        machine = _gcp_machine(itype, group, gpus, region)
        if machine:
            count, od, spot, notes, refused = machine
            out.append(_row(f"gcp:{itype}", "instance", region, "instance-hour", count, od,
                            spot, as_of, source, notes, refused))  # fmt: skip
    for name in GCP_SOLO_GPUS:
        if (name, 1) in gpus:
            od, spot = gpus[name, 1]
            note = f"NVIDIA {name}; GPU only, add an N1 host VM"
            refused = _above(od, spot, f"1x {name} in {region}")
            out.append(_row(f"gcp:{name.lower()}", "gpu", region, "gpu-hour", 1, od, spot,
                            as_of, source, note, refused))  # fmt: skip
    out += _tpus(accel_rows, region, source, as_of)
    return out


def _gcp_machine(itype, group, gpus, region):
    """(GPUs, on demand, spot, notes, why spot is refused) of one VM type, or None to skip it.

    A VM of a GPU family is priced with its GPUs or not at all: without them it
    is no machine anyone can rent.
    """
    od, spot = _best(group)
    bundle = next((g for p, g in GCP_BUNDLES.items() if itype.startswith(p)), None)
    notes = f"{group[0].get('vCPUs', '?')} vCPU / {group[0].get('MemoryGiB', '?')} GiB"
    if not bundle:
        refused = _above(od, spot, f"the {itype} VM in {region}")
        return None if od is None else (0, od, spot, notes, refused)
    count = _bundle_count(itype)
    g_od, g_spot = gpus.get((bundle, count), (None, None))
    in_gpu_row = od is None and all(_is_zero(r["Price"]) for r in group)
    if not count or g_od is None or (od is None and not in_gpu_row):
        return None
    accel = detect.accelerator_id("gpu", bundle.replace("-MEGA", ""))
    what = f"{count}x {bundle} in {region}"
    refused = _above(g_od, g_spot, what)
    if in_gpu_row:  # the VM row says 0.0: the GPU row prices the whole machine
        notes = f"accel={accel}; {count}x {bundle} {g_od}, its VM listed at 0.0; " + notes
        return count, g_od, g_spot, notes, refused
    refused = refused or _above(od, spot, f"the {itype} VM in {region}")
    notes = f"accel={accel}; host {od} + {count}x {bundle} {g_od}; " + notes
    spot = spot + g_spot if spot is not None and g_spot is not None else None
    return count, od + g_od, spot, notes, refused


def _is_zero(text: str) -> bool:
    try:
        return float(text) == 0.0
    except (TypeError, ValueError):
        return False


def _bundle_count(itype: str) -> int:
    if itype.startswith("g2-standard-"):  # not named by its GPU count: a machine fact
        facts = machine_facts.shape(f"gcp:{itype}")
        return facts.accelerators if facts else 0
    m = re.search(r"-(\d+)g(?:-(?:no)?lssd)?$", itype)
    return int(m.group(1)) if m else 0


def _tpus(accel_rows, region, source, as_of):
    """Per-chip rows from the smallest slice of each generation (v2/v3: the -8 slice)."""
    best: dict[str, tuple[int, float | None, float | None]] = {}
    for (name,), group in accel_rows.items():
        m = re.fullmatch(r"tpu-(v\d+[a-z]*)-(\d+)", name.lower())
        if not m:
            continue
        gen = {"v5litepod": "v5e", "v6litepod": "v6e"}.get(m.group(1), m.group(1))
        n = int(m.group(2))
        chips = n if gen in machine_facts.suffix_counting("chips") else n // 2
        od, spot = _best(group)
        if od is None or chips < 1 or (gen in ("v2", "v3") and n != 8):
            continue
        if gen not in best or chips < best[gen][0]:
            best[gen] = (chips, od, spot)
    out = []
    for gen, (chips, od, spot) in sorted(best.items()):
        refused = _above(od, spot, f"a {chips}-chip tpu-{gen} slice in {region}")
        if gen in ("v2", "v3"):
            out.append(_row(f"gcp:tpu-{gen}-8", "tpu", region, "slice-hour", 4, od, spot,
                            as_of, source, "8-core slice = 4 chips", refused))  # fmt: skip
        else:
            spot = spot / chips if spot is not None else None
            out.append(_row(f"gcp:tpu-{gen}", "tpu", region, "chip-hour", 1, od / chips, spot,
                            as_of, source, f"per chip, from a {chips}-chip slice",
                            refused))  # fmt: skip
    return out
