"""A finding's band: the outcomes it accepts, written with units in the study file.

    band: 4 vCPUs            knee: the knee lies at 4 vCPUs (a range: 2-4 vCPUs)
    band: 2 vCPUs, 1GiB      sizing: the vCPU answer and the memory answer
    band: at least 1.1x      ratio: a/b (data_ratio: b/a, the data kinds); or at most 0.9x
    band: 0.87x-1.15x        about_equal, and any ratio: both ends
    band: at least 90% of ideal   scaling: the rate at the most devices over ideal
    band: at most 0.9x       cheapest: the setup's $/epoch over the next cheapest's;
                             slowest: its rate over the slowest other's
    band: at least 1.0x      fastest: the setup's rate over the fastest other's
    (`>=` and `<=` work too, quoted: YAML reads a bare `>` as a block.)
    best_method: its `expect` list of methods is its band (`except`: methods left out).

A band must accept fewer than half of the outcomes the finding could see,
or it would pass on a coin toss.  What it could see, from its own sweep:

- knee: the vCPU sizes judged; sizing: its vCPU counts, and apart its memory caps;
- best_method: the methods its setups compare; cheapest, slowest and fastest: the
  setups named, plus "none by the margin" when the band asks for one (a bound below
  1x; for fastest, above);
- ratio, about_equal, data_ratio: the ratio, on a grid of 2^(k/20) from half to
  twice (further out when the band's own bound lies beyond);
- scaling: the speedup at the most devices, from none (1x) to ideal, on that grid.
"""

from __future__ import annotations

import dataclasses
import math
import re

from tpubench.core import errors
from tpubench.hardware import memory_cap

STEPS_PER_DOUBLING = 20  # the ratio grid: 2^(k/20), about 3.5% apart
_NUM = r"\d+(?:\.\d+)?"
_UNIT = r"x|vCPUs?|% of ideal"
_ONE = re.compile(rf"^(>=|<=|at least|at most)?\s*({_NUM})\s*({_UNIT})$")
_SIDE = {">=": ">=", "at least": ">=", "<=": "<=", "at most": "<=", None: None}
_RANGE = re.compile(rf"^({_NUM})\s*({_UNIT})?\s*[-–]\s*({_NUM})\s*({_UNIT})$")
UNITS = {  # kind -> the units its band is written in (sizing: vCPUs, then a memory size)
    "knee": ("vCPUs",),
    "sizing": ("vCPUs", "memory"),
    "ratio": ("x",),
    "about_equal": ("x",),
    "data_ratio": ("x",),
    "cheapest": ("x",),
    "slowest": ("x",),
    "fastest": ("x",),
    "scaling": ("% of ideal",),
}
EXAMPLE = {
    "vCPUs": "4 vCPUs or 2-4 vCPUs",
    "memory": "1GiB or 1GiB-2GiB",
    "x": "at least 1.1x, at most 0.9x or 0.9x-1.1x",
    "% of ideal": "at least 90% of ideal",
    "vCPUs and memory": "'2 vCPUs, 1GiB' (quoted: a comma ends a flow mapping's value)",
}


@dataclasses.dataclass(frozen=True)
class Band:
    """Accepts lo <= value <= hi (None: no bound on that side), in UNIT."""

    lo: float | None
    hi: float | None
    unit: str
    text: str

    def accepts(self, value: float) -> bool:
        eps = 1e-9 * max(1.0, abs(value))
        return (self.lo is None or value >= self.lo - eps) and (
            self.hi is None or value <= self.hi + eps
        )


def each(value) -> list:
    """A check key that takes one value or a list of them (`devices: 8`, `devices: [2, 4]`),
    as a list; [] when the key is absent."""
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def method(setup) -> str | None:
    """How a multi-device setup combines gradients: its all-reduce or strategy."""
    if setup.devices < 2:
        return None
    where = setup.variables or "cpu"  # where the parameter servers keep the variables
    if setup.strategy == "central_storage":  # the seeds' synchronous, in-process form
        return f"ps_{where}"
    if setup.strategy == "parameter_server":  # TF2's: asynchronous, a cluster of processes
        return f"async_ps_{where}"
    return setup.all_reduce or setup.strategy or "auto"


def _bad(where: str, text, unit: str) -> errors.UsageError:
    shown = {"x": "ratios (x)"}.get(unit, unit)
    return errors.UsageError(
        f"{where}.band={text!r} is not a band in {shown}: give e.g. {EXAMPLE[unit]}"
    )


def _one(text: str, unit: str, where: str) -> Band:
    if unit == "memory":
        ends = [memory_cap.parse(x.strip(), f"{where}.band") for x in text.split("-")]
        if len(ends) > 2 or ends[0] > ends[-1]:
            raise _bad(where, text, unit)
        return Band(ends[0], ends[-1], unit, text)
    same = (lambda u: u and u.rstrip("s") == unit.rstrip("s")) if unit == "vCPUs" else None
    m = _ONE.match(text)
    if m and (m.group(3) == unit or (same and same(m.group(3)))):
        x = float(m.group(2))
        lo, hi = {">=": (x, None), "<=": (None, x), None: (x, x)}[_SIDE[m.group(1)]]
    else:
        m = _RANGE.match(text)
        ok = m and (m.group(4) == unit or (same and same(m.group(4))))
        if not ok or (m.group(2) and m.group(2) != m.group(4)):
            raise _bad(where, text, unit)
        lo, hi = float(m.group(1)), float(m.group(3))
        if lo > hi:
            raise _bad(where, text, unit)
    if (unit == "x" and (lo == 0 or hi == 0)) or (unit != "x" and hi is None and lo is None):
        raise _bad(where, text, unit)
    return Band(lo, hi, unit, text)


def parse(check: dict, where: str) -> tuple[Band, ...]:
    """The check's band, one Band per unit its kind judges; one-line UsageError if bad."""
    units = UNITS[check["kind"]]
    text = check.get("band")
    if not isinstance(text, str) or not text.strip():
        raise _bad(where, text, units[0])
    pieces = [p.strip() for p in text.split(",")]
    if len(pieces) != len(units):
        raise _bad(where, text, " and ".join(units))
    return tuple(_one(p, u, where) for p, u in zip(pieces, units, strict=True))


def of(check: dict) -> tuple[Band, ...]:
    """The band of a check the loader has validated."""
    return parse(check, "finding")


def _grid(span: float, low: float | None = None) -> list[float]:
    """Ratios 2^(k/20) from 1/SPAN (or LOW) to SPAN."""
    top = math.ceil(STEPS_PER_DOUBLING * math.log2(span) - 1e-9)
    bottom = -top if low is None else math.floor(STEPS_PER_DOUBLING * math.log2(low) + 1e-9)
    return [2 ** (k / STEPS_PER_DOUBLING) for k in range(bottom, top + 1)]


def _span(band: Band) -> float:
    ends = [x for x in (band.lo, band.hi) if x]
    return max([2.0, *ends, *[1 / x for x in ends]])


def outcomes(check: dict, part) -> list[tuple[str, list, int]]:
    """(what, the outcomes this finding could see, how many its band accepts), per band."""
    kind, setups = check["kind"], part.setups
    if kind == "best_method":
        methods = []
        for s in setups:
            if check.get("device") and s.device != check["device"]:
                continue
            if check.get("devices") and s.devices not in each(check["devices"]):
                continue
            if method(s) in check.get("except", []):
                continue
            if method(s) and method(s) not in methods:
                methods.append(method(s))
        return [("methods", methods, len([m for m in methods if m in check["expect"]]))]
    bands = of(check)
    band = bands[0]
    if kind == "knee":
        among = check.get("among") or [s.label for s in setups if s.vcpus]
        sizes = sorted({s.vcpus for s in setups if s.label in among and s.vcpus})
        return [("vCPU sizes", sizes, sum(band.accepts(v) for v in sizes))]
    if kind == "sizing":
        sizes = sorted({s.vcpus for s in setups if s.vcpus})
        caps = sorted({memory_cap.parse(s.memory) for s in setups if s.memory})
        shown = [memory_cap.shown(c) for c in caps]
        return [
            ("vCPU counts", sizes, sum(band.accepts(v) for v in sizes)),
            ("memory caps", shown, sum(bands[1].accepts(c) for c in caps)),
        ]
    if kind in ("cheapest", "slowest", "fastest"):
        among = list(check.get("among") or [s.label for s in setups])
        # a margin: "none wins by it" is an outcome too (fastest: a bound above 1x)
        if kind == "fastest":
            margin = band.hi is not None or band.lo > 1
        else:
            margin = band.hi is None or band.hi < 1
        if margin:
            among.append("none by the margin")
        return [("outcomes", among, 1)]
    if kind == "scaling":
        models = set(check.get("models") or [])
        counts = [
            s.devices
            for s in setups
            if s.device == check.get("device", s.device)
            and (not models or not s.models or models & set(s.models))
        ]
        ideal = max(counts) / min(counts) if counts else 1.0
        grid = _grid(max(ideal, 2.0), low=1.0)
        ok = sum(band.accepts(100 * g / ideal) for g in grid if g <= ideal * (1 + 1e-9))
        return [("speedups", [g for g in grid if g <= ideal * (1 + 1e-9)], ok)]
    grid = _grid(_span(band))
    return [("ratios", grid, sum(band.accepts(g) for g in grid))]


def _listed(values: list) -> str:
    if values and isinstance(values[0], float):
        return f"a grid of {len(values)} from {values[0]:.3g}x to {values[-1]:.3g}x"
    return ", ".join(str(v) for v in values)


# A ratio band that holds 1.0x claims "no change": within this factor either way.  A wider
# one holding 1.0x would pass both the claim and its opposite ("loses about 15%" with a
# band of 0.8x-1.6x passes no loss at all).
NO_CHANGE = 1.3
_COMPARED = ("ratio", "about_equal", "data_ratio")


def _claims_one_thing(check: dict, band: Band, where: str) -> None:
    """A compared ratio's band claims a change (1.0x outside it) or no change (1.0x inside
    and the band within NO_CHANGE either way), never both; about_equal claims no change."""
    holds_one = band.accepts(1.0)
    wide = (band.lo or 0.0) < 1 / NO_CHANGE - 1e-9 or band.hi is None or band.hi > NO_CHANGE
    if holds_one and wide:
        raise errors.UsageError(
            f"{where}: band {band.text!r} holds both no change (1.0x) and a change beyond "
            f"{NO_CHANGE:g}x either way; a finding of a change needs a band without 1.0x, one "
            f"of no change a band within {1 / NO_CHANGE:.2f}x-{NO_CHANGE:g}x"
        )
    if check["kind"] == "about_equal" and not holds_one:
        raise errors.UsageError(
            f"{where}: band {band.text!r} of an about_equal finding does not hold 1.0x; "
            "accepted: a band around 1.0x, e.g. 0.9x-1.1x (a change is a `ratio` finding)"
        )


def validate(check: dict, part, where: str) -> None:
    """The band parses, claims one thing, and accepts fewer than half of what the finding
    could see."""
    if check["kind"] in UNITS:
        parse(check, where)
    if check["kind"] == "best_method":
        if not isinstance(check["expect"], list) or not check["expect"]:
            raise errors.UsageError(f"{where}.expect must be a list of methods")
        known = [m for _, ms, _ in outcomes(check, part) for m in ms]
        for m in check["expect"]:
            if m not in known:
                raise errors.unknown(f"method in {where}.expect:", str(m), known)
    for what, values, accepted in outcomes(check, part):
        if accepted * 2 >= len(values):
            shown = check.get("band") if "band" in check else check.get("expect")
            raise errors.UsageError(
                f"{where}: band {shown!r} accepts {accepted} of the {len(values)} {what} this "
                f"finding could see ({_listed(values)}); a band must accept fewer than half"
            )
    if check["kind"] in _COMPARED:
        _claims_one_thing(check, parse(check, where)[0], where)


def shown(check: dict) -> str:
    """The band as the report prints it beside a finding ('' for a finding judged by none)."""
    if check["kind"] == "best_method":
        return " or ".join(check["expect"])
    return check.get("band", "")
