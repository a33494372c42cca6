"""Flag values that need more than absl's types: durations, k=v lists, batch-size lists."""

from __future__ import annotations

import re

from tpubench.core import bounds, errors, safe_text

# Longer units first: "ms" and "min" must not be read as "m" and a stray rest.
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(d|h|ms|us|min|m|s)?", re.I)

_UNIT_SECONDS = {
    "d": 86400,
    "h": 3600,
    "m": 60,
    "min": 60,
    "s": 1,
    "ms": 1e-3,
    "us": 1e-6,
    None: 1,
}


def parse_duration(text: str, flag: str = "--deadline") -> float:
    """'1h30m' -> 5400.0 seconds; UsageError for anything else."""
    s = (text or "").strip().lower().replace(" ", "")
    pos, total = 0, 0.0
    while pos < len(s):
        m = _DURATION.match(s, pos)
        if not m:
            break
        total += float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
        pos = m.end()
    if not s or pos != len(s) or total <= 0:
        raise errors.UsageError(
            f"{flag}={text!r} is not a positive duration; accepted: e.g. 90m, 2h, 1h30m, 3600s, "
            "1d, 50ms"
        )
    return bounds.check_duration(total, flag)


_OFF = ("0", "off", "none", "never")
MIN_EVERY_SECONDS = 1.0


def parse_every(text: str | None, flag: str) -> float | None:
    """A cadence: '10m' -> 600.0 seconds; '0' or 'off' -> None (no periodic work)."""
    if text is None or text.strip().lower() in _OFF:
        return None
    try:
        seconds = parse_duration(text, flag)
    except errors.UsageError as e:
        if "out of range" in str(e):  # a duration, too long: its own line says so
            raise
        raise errors.UsageError(
            f"{flag}={text!r} is not a duration; accepted: e.g. 10m, 30s, 1h, or 0/off to turn "
            "it off"
        ) from None
    if seconds < MIN_EVERY_SECONDS:  # a save after every loop: training would mostly save
        raise errors.UsageError(
            f"{flag}={text} is shorter than {MIN_EVERY_SECONDS:g} s; accepted: 1s to 7d, or "
            "0/off to turn it off"
        )
    return seconds


def parse_params(items: list[str]) -> tuple[tuple[str, str], ...]:
    """`--params=k=v,...` as pairs.  A key the run sets itself (batch size, seed, ...) is
    refused here, with the flag that sets it: a usage error, before anything loads or is
    written (registry.resolve_params refuses it too, for callers of the API)."""
    from tpubench.model.model_api import RUNTIME_PARAMS

    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise errors.UsageError(f"--params entry {item!r} is not k=v (e.g. dropout=0.1)")
        key, value = key.strip(), value.strip()
        if key in RUNTIME_PARAMS:
            shown = safe_text.shown(value, limit=100)
            raise errors.UsageError(
                f"--params: {key}={shown} is not a hyperparameter: "
                + RUNTIME_PARAMS[key].format(shown)
            )
        out.append((key, value))
    return tuple(out)


def parse_batch_sizes(items: list[str], flag: str = "--batch_size") -> tuple[int, ...]:
    """`--batch_size=1,8,32` -> (1, 8, 32); anything but distinct positive integers is an error."""
    out = []
    for item in items:
        text = item.strip()
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1 or str(value) != text.lstrip("+"):
            raise errors.UsageError(
                f"{flag}={','.join(items)}: {text!r} is not a positive integer; accepted: "
                f"positive integers separated by commas, e.g. {flag}=1,8,32,128"
            )
        if value in out:
            raise errors.UsageError(
                f"{flag}={','.join(items)}: {value} is given twice; give each batch size once"
            )
        out.append(value)
    return tuple(out)
