"""What a scenario plug-in declares of its settings: its flags, its user.conf keys, their ranges.

Pure Python and free of absl: a plug-in (run/infer/scenarios/) lists `Flag`s
and `ConfKey`s; the CLI edge (cli/scenario_flags.py) defines the union of
every plug-in's flags once and hands each scenario its own parsed values as
`Values`, and user_conf.py holds a user.conf's keys to the ranges the
scenario declared.  A value out of its range is one line naming the flag
(or the user.conf line) and what is accepted.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping
from typing import Any

from tpubench.core import bounds, errors

KINDS = ("int", "float", "duration")  # a duration is given as text (50ms, 2s) and held in s


@dataclasses.dataclass(frozen=True)
class Range:
    """The values a number may take: LOW to HIGH in UNIT, whole where WHOLE."""

    low: float
    high: float
    unit: str
    whole: bool = False

    def holds(self, value: float) -> bool:
        v = float(value)
        return math.isfinite(v) and self.low <= v <= self.high and (not self.whole or v == int(v))

    def text(self) -> str:
        """'1 to 100 (LoadGen runs)', as core/bounds.check_flag says it."""
        return f"{_shown(self.low)} to {_shown(self.high)} ({self.unit})"


def _duration(seconds: float) -> str:
    if seconds == 0:
        return "0"
    if seconds < 1:
        return f"{seconds * 1e3:g}ms"
    return f"{seconds / 86400:g}d" if seconds % 86400 == 0 else f"{seconds:g}s"


def _shown(x: float) -> str:
    return f"{int(x):,}" if float(x) == int(x) and abs(x) < 1e7 else f"{x:g}"


@dataclasses.dataclass(frozen=True)
class Flag:
    """One flag of a scenario: `--NAME`, of KIND, its DEFAULT (None: not given), its HELP.

    FIELD is the scenario's own setting it fills (default: NAME); a duration's
    DEFAULT is in seconds (--help shows it in ms); "0" is 0 s where RANGE allows it.
    """

    name: str
    kind: str
    default: Any
    help: str
    range: Range | None = None
    field: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"flag --{self.name}: kind {self.kind!r}; accepted: {KINDS}")

    @property
    def key(self) -> str:
        return self.field or self.name

    def check(self, value, spelled: str | None = None) -> None:
        """A one-line UsageError when VALUE (parsed; seconds for a duration) is out of range."""
        if value is None or self.range is None or self.range.holds(value):
            return
        shown = spelled if spelled is not None else f"{value:g}"
        raise errors.UsageError(
            f"--{self.name}={shown} is out of range; accepted: {self.range_text()}"
        )

    def range_text(self) -> str:
        """Its range as --help and a refusal say it: a duration's as durations (2ms, 7d)."""
        if self.range is None:
            return ""
        if self.kind != "duration":
            return self.range.text()
        return f"{_duration(self.range.low)} to {_duration(self.range.high)}"


@dataclasses.dataclass(frozen=True)
class ConfKey:
    """One key LoadGen reads from a user.conf for this scenario, and what tpubench does with it.

    USE: "honoured" (passed to LoadGen as is), "expected" (LoadGen sizes the run
    by it instead of the closed loop), "flag --x" (honoured unless --x is
    given), or anything else: the reason the key is refused.  RANGE: the
    values tpubench accepts for a key it uses itself.
    """

    use: str
    range: Range | None = None


class Values(Mapping):
    """A scenario's own settings, read-only: `values["x"]` or `values.x`."""

    __slots__ = ("_d",)

    def __init__(self, items: Mapping | None = None):
        object.__setattr__(self, "_d", dict(items or {}))

    def __getitem__(self, key: str):
        return self._d[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._d[name]
        except KeyError:
            raise AttributeError(f"no scenario setting {name!r}") from None

    def __setattr__(self, name, value):
        raise AttributeError("a scenario's settings are read-only")

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._d.items(), key=lambda kv: kv[0])))

    def __eq__(self, other) -> bool:
        return isinstance(other, Mapping) and dict(self) == dict(other)

    def __repr__(self) -> str:
        return f"Values({self._d!r})"

    def __reduce__(self):
        return (Values, (self._d,))

    def __or__(self, other: Mapping) -> Values:
        return Values({**self._d, **other})


def defaults(flags: tuple[Flag, ...]) -> Values:
    """The settings FLAGS give when none is typed."""
    return Values({f.key: f.default for f in flags})


# Ranges several scenarios declare (a user.conf's keys and the flags standing for them).
WEEK_MS = int(bounds.MAX_DURATION_SECONDS * 1000)  # a week, in LoadGen's milliseconds
QPS = Range(*bounds.FLAGS["target_qps"])
PERCENT = Range(1, 99.99, "percent")  # a user.conf's target_latency_percentile
LATENCY_MS = Range(0.001, WEEK_MS, "ms")  # a user.conf's target_latency
