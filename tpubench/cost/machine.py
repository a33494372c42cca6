"""Priced machine descriptions: `--machine=gcp:n1-standard-8+4xgcp:v100`.

A machine is a list of parts joined by `+`.  Each part is an optional count
(`4x`), a catalog key (`gcp:v100`) and an optional date pin (`@2017` or
`@2017-06-01`) that selects an older catalog row.

TPU slice names are resolved here rather than listed in the catalog, the
way Cloud TPU names them: the suffix of `tpu-v5e-8` / `tpu-v6e-8` counts
chips, the suffix of `tpu-v2-8`, `tpu-v3-8`, `tpu-v4-8`, `tpu-v5p-8` counts
TensorCores (two per chip).  A slice is priced from the per-chip row
(`gcp:tpu-v5e`), or for v2/v3, which are sold by the 8-core slice, as a
multiple of the `-8` slice row.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from typing import NamedTuple

from tpubench.core import errors, machine_facts
from tpubench.cost import catalog, catalog_rows

PART_FORM = "parts like [Nx]provider:name[@YYYY] joined by '+', e.g. gcp:n1-standard-8+4xgcp:v100"
_COUNT_RE = re.compile(r"^(?P<count>[-+]?[\d.]+)\s*[xX]\s*(?P<rest>.*)$")
_TPU_RE = re.compile(r"^(?P<provider>[a-z0-9_-]+):tpu-(?P<gen>v\d+[a-z]*)-(?P<n>\d+)$")


@dataclasses.dataclass(frozen=True)
class Part:
    """One `+`-separated part: `count` units of catalog `key`, optionally pinned to `when`."""

    count: int
    key: str
    when: str | None = None

    @property
    def pinned_key(self) -> str:
        """The key with its `@when` pin, as a user writes it."""
        return f"{self.key}@{self.when}" if self.when else self.key

    def __str__(self) -> str:
        return self.pinned_key if self.count == 1 else f"{self.count}x{self.pinned_key}"


class Accelerators(NamedTuple):
    """What a machine carries: kind ('gpu', 'tpu', 'mixed' or 'cpu'), name, count.

    TPUs are counted in chips.  A CPU-only machine is ('cpu', '', 0).
    """

    kind: str
    name: str
    count: int

    def __str__(self) -> str:
        return f"{self.count} x {self.name}" if self.count else "no accelerators (CPU only)"


@dataclasses.dataclass(frozen=True)
class Resolved:
    """A part's key resolved to a catalog row.

    Attributes:
      row: the catalog row that prices the part.
      units: how many of `row`'s units one part is (8 chips for tpu-v5e-8).
      accelerators: accelerators one part carries (TPU chips, GPUs).
      accel_kind: 'gpu', 'tpu' or '' when none.
      accel_name: e.g. 'v100', 'tpu-v5e', 'a100-40gb'; '' when none.
      note: how a TPU slice name was turned into `units` (empty otherwise).
    """

    row: catalog_rows.Row
    units: int
    accelerators: int
    accel_kind: str
    accel_name: str
    note: str = ""


@dataclasses.dataclass(frozen=True)
class Machine:
    """A parsed `--machine` description."""

    parts: tuple[Part, ...]

    @property
    def spec(self) -> str:
        """The canonical spelling, e.g. `gcp:n1-standard-8+4xgcp:v100`."""
        return "+".join(str(p) for p in self.parts)

    def __str__(self) -> str:
        return self.spec

    def resolve(self, cat: catalog.Catalog) -> list[tuple[Part, Resolved]]:
        """Resolves every part against `cat` (raises PriceError like `resolve`)."""
        return [(p, resolve(p, cat)) for p in self.parts]

    def accelerators(self, cat: catalog.Catalog) -> Accelerators:
        """Summarises the accelerators of the machine, for per-accelerator figures.

        Args:
          cat: the catalog that prices the parts (it says what each key carries).

        Returns:
          e.g. Accelerators('gpu', 'v100', 4) for `gcp:n1-standard-8+4xgcp:v100`;
          mixed accelerators give kind 'mixed' and names joined by '+'.
        """
        kinds: list[str] = []
        names: list[str] = []
        total = 0
        for part, res in self.resolve(cat):
            if not res.accelerators:
                continue
            total += part.count * res.accelerators
            if res.accel_kind not in kinds:
                kinds.append(res.accel_kind)
            if res.accel_name not in names:
                names.append(res.accel_name)
        if not total:
            return Accelerators("cpu", "", 0)
        kind = kinds[0] if len(kinds) == 1 else "mixed"
        return Accelerators(kind, "+".join(names), total)


def parse(spec: str) -> Machine:
    """Parses a `--machine` description.

    Args:
      spec: parts joined by `+`, each `[Nx]provider:name[@YYYY|@YYYY-MM-DD]`,
        e.g. `gcp:n1-standard-8+4xgcp:v100`, `gcp:tpu-v5e-8`, `gcp:k80@2017`.

    Returns:
      The machine; keys are lower-cased, nothing is looked up yet.

    Raises:
      UsageError: the description or one of its parts is malformed.
    """
    if not spec or not spec.strip():
        raise errors.UsageError(f"--machine is empty; expected {PART_FORM}")
    return Machine(tuple(_parse_part(p.strip(), spec) for p in spec.split("+")))


def _parse_part(text: str, spec: str) -> Part:
    def bad(problem: str) -> errors.UsageError:
        where = f"{text!r}" if text == spec.strip() else f"{text!r} in {spec!r}"
        return errors.UsageError(f"bad --machine part {where}: {problem}; expected {PART_FORM}")

    if not text:
        raise bad("empty part (two '+' in a row, or a leading/trailing '+')")
    count, rest = 1, text
    m = _COUNT_RE.match(text)
    if m:
        if not m["count"].isdigit() or int(m["count"]) < 1:
            raise bad(f"count {m['count']!r} is not a positive whole number")
        count, rest = int(m["count"]), m["rest"]
    key, at, when = rest.partition("@")
    key = key.strip().lower()
    if at:
        when = when.strip()
        if not catalog_rows.WHEN_RE.match(when) or not _valid_date(when):
            raise bad(f"date pin {'@' + when!r} is not @YYYY or @YYYY-MM-DD")
    if not key:
        raise bad("no catalog key")
    if ":" not in key:
        raise bad(f"key {key!r} has no provider prefix (e.g. gcp:{key})")
    if not catalog_rows.KEY_RE.match(key):
        raise bad(f"key {key!r} is not {catalog_rows.KEY_FORM}")
    return Part(count=count, key=key, when=when if at else None)


def _valid_date(when: str) -> bool:
    if len(when) == 4:
        return True
    try:
        datetime.date.fromisoformat(when)
    except ValueError:
        return False
    return True


def resolve(part: Part, cat: catalog.Catalog) -> Resolved:
    """Finds the catalog row that prices `part.key` and how many of its units one part is.

    A key present in the catalog is used as is.  Otherwise a TPU slice name
    (`gcp:tpu-v5e-8`, `gcp:tpu-v4-32`, `gcp:tpu-v2-32`) is priced from its
    generation's per-chip row, or from the `-8` slice row for v2/v3.

    Raises:
      PriceError: unknown key (with close matches), an impossible slice size,
        or no row for the `@when` pin.
    """
    if part.key in cat:
        return _describe(cat.lookup(part.key, part.when), units=1)
    m = _TPU_RE.match(part.key)
    if not m:
        cat.lookup(part.key, part.when)  # raises the unknown-key error with close matches
        raise AssertionError("unreachable: lookup of an unknown key returned")
    provider, gen, n = m["provider"], m["gen"], int(m["n"])
    counts = machine_facts.tpu_generation(gen)
    if counts and counts.suffix_counts == "chips":
        chips, how = n, f"{n} chips"
    elif counts and counts.suffix_counts == "cores":
        if n % 2:
            raise errors.PriceError(
                f"{part.key}: the tpu-{gen} suffix counts TensorCores (2 per chip), so it "
                f"must be even, e.g. tpu-{gen}-8"
            )
        chips, how = n // 2, f"{n} TensorCores = {n // 2} chips"
    else:
        known = sorted(machine_facts.tpu_generations())
        raise errors.PriceError(
            f"{part.key}: unknown TPU generation {gen!r} (known: {', '.join(known)})"
        )
    if chips < 1:
        raise errors.PriceError(f"{part.key}: a TPU slice needs at least one chip")
    chip_key, slice_key = f"{provider}:tpu-{gen}", f"{provider}:tpu-{gen}-8"
    if chip_key in cat:
        row = cat.lookup(chip_key, part.when)
    elif slice_key in cat:
        row = cat.lookup(slice_key, part.when)
    else:
        raise errors.PriceError(
            f"no price for {part.key}: {cat.path} has neither {chip_key} (per chip) "
            f"nor {slice_key} (per slice)"
        )
    per_unit = max(row.count, 1)
    if chips % per_unit:
        raise errors.PriceError(
            f"{part.key} is {chips} chips, not a whole number of {row.key} units "
            f"({per_unit} chips each)"
        )
    units = chips // per_unit
    note = f"{part.key} = {how} = {units} x {row.key}"
    return _describe(row, units=units, note=note)


def _describe(row: catalog_rows.Row, units: int, note: str = "") -> Resolved:
    """Says which accelerators `units` of `row` carry."""
    name = row.key.split(":", 1)[1]
    if row.kind == "tpu":
        kind, name = "tpu", re.sub(r"-\d+$", "", name)  # tpu-v2-8 -> tpu-v2
    elif row.kind == "gpu":
        kind = "gpu"
    elif row.kind == "instance" and row.count:
        # Which accelerator an instance bundles is a machine fact (core/machines.csv),
        # never read from the row's notes.
        facts = machine_facts.shape(row.key)
        name = facts.accelerator if facts and facts.accelerators else name
        kind = "tpu" if name.startswith("tpu") else "gpu"
    else:
        return Resolved(row, units, 0, "", "", note)
    return Resolved(row, units, units * row.count, kind, name, note)
