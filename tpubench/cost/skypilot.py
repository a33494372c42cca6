"""`tpubench prices import FILE...`: SkyPilot-format `vms.csv` files into the user catalog.

SkyPilot's catalogs (skypilot-org/skypilot-catalog, `catalogs/v7/gcp/vms.csv`
and `catalogs/v7/aws/vms.csv`) list one row per instance type and zone, with
columns named in the header (the order differs by cloud): `InstanceType,
AcceleratorName, AcceleratorCount, vCPUs, MemoryGiB, GpuInfo, Price,
SpotPrice, Region, AvailabilityZone`.  What they mean here:

- AWS rows are whole instances: `aws:<InstanceType>`, carrying
  `AcceleratorCount x AcceleratorName`.
- GCP instance rows are the VM alone; GPUs are separate rows with an empty
  InstanceType (`,,,H100,1,...`) and TPUs are rows named `tpu-v5e-8`.  A2/A3
  and G2 machines are priced here as their VM plus the GPUs they come with;
  T4/V100/P100/P4/K80 become per-GPU rows (add an N1 host), TPUs per-chip rows
  (v2/v3 per 8-core slice).
- A price of 700.0 means "not offered in this zone"; the lowest spot price
  over a region's zones is kept.

Rows are taken from one region per cloud (us-central1, us-east-1, like the
shipped catalog), dated by the file's modification day, with the file named as
their source.  The user catalog (`catalog.user_path()`) keeps them; it
overrides the shipped rows of the same keys.  Pure Python.
"""

from __future__ import annotations

import csv
import datetime
import io
import os
import re

from tpubench.core import errors, safe_files
from tpubench.cost import catalog as catalog_lib
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
    "a3-highgpu-": "H100",
    "a3-megagpu-": "H100-MEGA",
    "a3-ultragpu-": "H200",
    "g2-standard-": "L4",
}
G2_GPUS = {4: 1, 8: 1, 12: 1, 16: 1, 24: 2, 32: 1, 48: 4, 96: 8}
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


def read(text: str, name: str, as_of: datetime.date) -> list[catalog_rows.Row]:
    """Turns one SkyPilot-format vms.csv into catalog rows (see the module docstring).

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
    source = f"{name} (SkyPilot-format {cloud} catalog, imported)"
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


def _row(key, kind, region, unit, count, od, spot, as_of, source, notes) -> catalog_rows.Row:
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
        out.append(_row(f"aws:{itype}", "instance", first["Region"], "instance-hour", n, od,
                        spot, as_of, source, notes))  # fmt: skip
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
        od, spot = _best(group)
        if od is None:
            continue
        bundle = next((g for p, g in GCP_BUNDLES.items() if itype.startswith(p)), None)
        notes = f"{group[0].get('vCPUs', '?')} vCPU / {group[0].get('MemoryGiB', '?')} GiB"
        count = 0
        if bundle:
            count = _bundle_count(itype)
            g_od, g_spot = gpus.get((bundle, count), (None, None))
            if not count or g_od is None:
                continue  # the VM without its GPUs is no machine anyone can rent
            accel = detect.accelerator_id("gpu", bundle.replace("-MEGA", ""))
            notes = f"accel={accel}; host {od} + {count}x {bundle} {g_od}; " + notes
            od = od + g_od
            spot = spot + g_spot if spot is not None and g_spot is not None else None
        out.append(_row(f"gcp:{itype}", "instance", region, "instance-hour", count, od, spot,
                        as_of, source, notes))  # fmt: skip
    for name in GCP_SOLO_GPUS:
        if (name, 1) in gpus:
            od, spot = gpus[name, 1]
            note = f"NVIDIA {name}; GPU only, add an N1 host VM"
            out.append(_row(f"gcp:{name.lower()}", "gpu", region, "gpu-hour", 1, od, spot,
                            as_of, source, note))  # fmt: skip
    out += _tpus(accel_rows, region, source, as_of)
    return out


def _bundle_count(itype: str) -> int:
    if itype.startswith("g2-standard-"):
        return G2_GPUS.get(_count(itype.rsplit("-", 1)[1]), 0)
    m = re.search(r"-(\d+)g$", itype)
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
        chips = n if gen in ("v5e", "v6e") else n // 2
        od, spot = _best(group)
        if od is None or chips < 1 or (gen in ("v2", "v3") and n != 8):
            continue
        if gen not in best or chips < best[gen][0]:
            best[gen] = (chips, od, spot)
    out = []
    for gen, (chips, od, spot) in sorted(best.items()):
        if gen in ("v2", "v3"):
            out.append(_row(f"gcp:tpu-{gen}-8", "tpu", region, "slice-hour", 4, od, spot,
                            as_of, source, "8-core slice = 4 chips"))  # fmt: skip
        else:
            spot = spot / chips if spot is not None else None
            out.append(_row(f"gcp:tpu-{gen}", "tpu", region, "chip-hour", 1, od / chips, spot,
                            as_of, source, f"per chip, from a {chips}-chip slice"))  # fmt: skip
    return out


def import_files(paths: list[str], user_path: str | None = None) -> tuple[str, int, list[str]]:
    """Reads SkyPilot-format files into the user catalog.

    Rows of the user catalog with the same key and date are replaced; others
    kept.  A row the catalog would refuse once written (a NaN or negative
    price, an instance name that is no valid key) is left out and named.

    Returns:
      (the catalog's path, rows written, one line per row left out).

    Raises:
      UsageError: no FILE given.
      PriceError: a file is missing or not in SkyPilot's format.
    """
    if not paths:
        raise errors.UsageError(
            "tpubench prices import needs FILE arguments: SkyPilot-format vms.csv files, "
            "e.g. catalogs/v7/gcp/vms.csv"
        )
    new: list[catalog_rows.Row] = []
    left_out: list[str] = []
    for path in paths:
        try:
            text = safe_files.read_text(path, "", MAX_FILE_BYTES, "a SkyPilot-format vms.csv")
            mtime = os.path.getmtime(path)
        except safe_files.Unreadable as e:
            raise errors.PriceError(f"cannot read {path}: {e.error.strerror or e}") from None
        except errors.UsageError as e:  # a FIFO, a device, too large, not UTF-8
            raise errors.PriceError(f"cannot import {e}") from None
        as_of = datetime.date.fromtimestamp(mtime)
        for row in read(text, path, as_of):
            try:
                new.append(catalog_rows.check(row, f"{path}: {row.key}"))
            except errors.PriceError as e:
                left_out.append(str(e))
    if not new:
        raise errors.PriceError(
            f"no usable price row in {', '.join(paths)}"
            + (f" ({len(left_out)} refused, e.g. {left_out[0]})" if left_out else "")
        )
    target = user_path or catalog_lib.user_path()
    kept: list[catalog_rows.Row] = []
    if os.path.exists(target):
        fresh = {(r.key, r.as_of) for r in new}
        kept = [r for r in catalog_lib.load_user(target) if (r.key, r.as_of) not in fresh]
    catalog_lib.write(kept + new, target)
    return target, len(new), left_out
