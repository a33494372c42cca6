"""Stand-ins: setups that emulate hardware this host lacks, and the controls they are judged by.

Two setup keys stand in for a smaller machine:

- `read_mb_per_s`: a cloud disk, emulated where the input pipeline reads.  The
  emulator costs a pipeline something by itself (bench/emulated_disk.py: 13% of
  a 2-core JPEG pipeline), so an emulated disk is compared with a control read
  through the same emulator at a rate too fast to matter (CONTROL_MB_PER_S or
  more), never with a run that bypasses it;
- `memory`: a machine's RAM, as an RLIMIT_DATA cap (--memory_limit), which
  counts mapped rather than resident memory: a cap is judged against the other
  caps of its grid, the largest the control, never against an uncapped run.

The loader refuses a finding whose setups mix a stand-in with setups that
lack it, and every verdict that rests on one names the stand-in and its control.
"""

from __future__ import annotations

from tpubench.core import errors
from tpubench.hardware import memory_cap

CONTROL_MB_PER_S = 10_000  # an emulated disk this fast costs only the emulator itself
KEYS = {
    "read_mb_per_s": "an emulated disk (--read_mb_per_s)",
    "memory": "a memory cap (--memory_limit, RLIMIT_DATA)",
}


def _setting(setup, key: str):
    value = getattr(setup, key)
    return memory_cap.parse(value) if key == "memory" and value else value


def _shown(setup, key: str) -> str:
    if key == "memory":
        return f"{memory_cap.shown(_setting(setup, key))} cap"
    return f"{setup.read_mb_per_s:,g} MB/s"


def compared(check: dict, part) -> list:
    """The setups whose figures a finding's verdict sets against each other."""
    kind, by_label = check["kind"], {s.label: s for s in part.setups}
    if kind in ("ratio", "about_equal"):
        return [by_label[check["a"]], by_label[check["b"]]]
    if kind in ("cheapest", "slowest", "fastest", "knee") and check.get("among"):
        return [by_label[label] for label in check["among"]]
    if kind == "knee":
        return [s for s in part.setups if s.vcpus]
    return [s for s in part.setups if s.device == check.get("device", s.device)]


def validate(check: dict, part, where: str) -> None:
    """A stand-in is compared only with setups that use the same stand-in."""
    setups = compared(check, part)
    for key, what in KEYS.items():
        users = [s for s in setups if getattr(s, key)]
        if users and len(users) < len(setups):
            bare = next(s for s in setups if not getattr(s, key))
            control = (
                f"a control read through the same emulator at {CONTROL_MB_PER_S:,} MB/s or more"
                if key == "read_mb_per_s"
                else "another memory cap"
            )
            raise errors.UsageError(
                f"{where}: {users[0].label!r} stands in with {what} but {bare.label!r} does "
                f"not; judge a stand-in against {control} (a setup with {key}: ...)"
            )


def note(check: dict, part) -> str:
    """'on a stand-in: ...; control: ...' for a verdict that rests on one, else ''."""
    if check["kind"] in ("unmeasurable", "data_ratio"):
        # data_ratio compares data kinds within each setup: the same stand-in on both sides
        setups = [] if check["kind"] == "unmeasurable" else compared(check, part)[:1]
    else:
        setups = compared(check, part)
    said = []
    for key, what in KEYS.items():
        users = sorted((s for s in setups if getattr(s, key)), key=lambda s: _setting(s, key))
        if not users:
            continue
        control, rest = users[-1], users[:-1]
        same = "emulator" if key == "read_mb_per_s" else "cap"
        if not rest:
            said.append(f"on a stand-in, {what}: {control.label} at {_shown(control, key)}")
        elif len(rest) == 1:
            said.append(
                f"on a stand-in, {what}: {rest[0].label} at {_shown(rest[0], key)}, judged "
                f"against its control {control.label}, the same {same} at {_shown(control, key)}"
            )
        else:
            said.append(
                f"on a stand-in, {what}: {len(users)} setups from {_shown(rest[0], key)} to "
                f"{_shown(control, key)}, each judged against the others, never without the {same}"
            )
    return "; ".join(said)
