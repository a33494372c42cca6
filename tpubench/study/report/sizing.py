"""The `sizing` finding: how many vCPUs and how much memory a model needs.

Its part's setups are a grid of vCPUs x memory caps (`vcpus:` and
`memory:`, the cap passed as --memory_limit).  Two answers, from measured
cells only:

- vCPUs: the fewest whose best rate over the memory caps is within 5% of the
  best of all (the knee);
- memory: the smallest cap that did not fail and whose best rate over the
  vCPU counts is within 5% of the best of all.  A cell whose runs all failed
  at their cap (the record's error names it) counts as a cap too small;
  that is a measurement, not a missing cell.

The finding's band names both (`band: 2 vCPUs, 1GiB`, study/report/bands.py); the
verdict holds when both answers lie in it; when the 95% intervals could move
either answer across an edge of it, it is within noise.
"""

from __future__ import annotations

from tpubench.hardware import memory_cap
from tpubench.study.report import bands
from tpubench.study.report import judge as J

NEAR_BEST = 0.95


def capped_out(results, part: str) -> set[str]:
    """Ids of PART's cells with no ok run and a failed run that reached its memory cap."""
    return {c.id for c in results.cells if c.part.name == part and c.id in results.capped}


def _bounds(m) -> tuple[float, float]:
    return m.rate_ci or (m.rate, m.rate)


def _smallest(points: dict, best: float, best_lo: float, best_hi: float):
    """(answer, earliest possible, latest possible) over POINTS {size: [Measured]}."""
    sizes = sorted(points)

    def top(size, side):  # the best of a size's cells: its rate, or one end of its interval
        return max(m.rate if side is None else _bounds(m)[side] for m in points[size])

    answer = next(s for s in sizes if top(s, None) >= NEAR_BEST * best)
    early = next((s for s in sizes if top(s, 1) >= NEAR_BEST * best_lo), answer)
    late = next((s for s in sizes if top(s, 0) >= NEAR_BEST * best_hi), sizes[-1])
    return answer, early, late


def _within(band, values) -> str:
    inside = [band.accepts(v) for v in values]
    return J.HOLDS if all(inside) else J.FAILS if not any(inside) else J.NOISE


def _so_far(measured, cells, failed) -> str:
    """What the measured cells say while others are missing: the best rate per vCPU count."""
    best: dict = {}
    for m in measured:
        v = m.cell.setup.vcpus
        if v not in best or m.rate > best[v].rate:
            best[v] = m
    rates = ", ".join(f"{v} vCPU {best[v].rate:,.1f}/s" for v in sorted(best))
    text = f"so far: {rates}, the best of each count's caps"
    caps = sorted({memory_cap.parse(cell.setup.memory) for cell in cells if cell.id in failed})
    if caps:
        text += f"; failed at its cap: {', '.join(memory_cap.shown(x) for x in caps)}"
    return text


def check(results, c, not_measured) -> tuple[str, str]:
    """(what was measured, verdict) for a `sizing` finding C."""
    part = c["part"]
    cells = [cell for cell in results.cells if cell.part.name == part]
    failed = capped_out(results, part)
    measured = [results.measured[cell.id] for cell in cells if cell.id in results.measured]
    unknown = [cell for cell in cells if cell.id not in results.measured and cell.id not in failed]
    if unknown or not measured:
        what = "not every vCPU x memory cell measured"
        if measured:
            what += f" ({_so_far(measured, cells, failed)})"
        return what, not_measured(results.missing(part))
    by_vcpus: dict = {}
    by_memory: dict = {}
    for m in measured:
        by_vcpus.setdefault(m.cell.setup.vcpus, []).append(m)
        by_memory.setdefault(memory_cap.parse(m.cell.setup.memory), []).append(m)
    if len(by_vcpus) < 2 or len(by_memory) < 2:
        return (
            "fewer than two vCPU counts or memory caps at this scale",
            not_measured(["the grid of --scale=full"]),
        )
    best = max(m.rate for m in measured)
    best_lo = max(_bounds(m)[0] for m in measured)
    best_hi = max(_bounds(m)[1] for m in measured)
    vcpus = _smallest(by_vcpus, best, best_lo, best_hi)
    memory = _smallest(by_memory, best, best_lo, best_hi)
    caps = sorted({memory_cap.parse(cell.setup.memory) for cell in cells if cell.id in failed})
    model = cells[0].model.model
    text = (
        f"{model} stops gaining at {vcpus[0]} vCPUs and needs a {memory_cap.shown(memory[0])} "
        f"cap (within 5% of its best, {best:,.1f}/s)"
    )
    if (vcpus[1], vcpus[2]) != (vcpus[0], vcpus[0]) or (memory[1], memory[2]) != (
        memory[0],
        memory[0],
    ):
        text += (
            f"; within the intervals {vcpus[1]}–{vcpus[2]} vCPUs, "
            f"{memory_cap.shown(memory[1])}–{memory_cap.shown(memory[2])}"
        )
    if caps:
        text += f"; failed at its cap: {', '.join(memory_cap.shown(x) for x in caps)}"
    if any(m.busy for m in measured):
        text += " [measured on a busy host]"
    vcpu_band, memory_band = bands.of(c)
    verdict = J.combine([_within(vcpu_band, vcpus), _within(memory_band, memory)])
    return text, J.gate(results, measured) or verdict
