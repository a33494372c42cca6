"""A study's findings, checked against its measured cells: one line each.

Every check returns what was measured and a verdict: `holds`, `does not
hold here`, `within noise` (the 95% interval spans an edge of the finding's
band, study/report/bands.py), `not judged (...)` (smoke scale, or fewer runs than
the study's repeats) or `not measured (needs ...)`, naming what the missing
cells need (a GPU, more vCPUs, a gs:// copy of the data).  A check that
names setups (`among`, the knee's vCPU sizes) judges only when all of them
are measured.  A verdict on a stand-in (an emulated disk, a memory cap)
says so and names its control (study/spec/standins.py).  Only measured cells are
used; published figures never decide a verdict: what the finding's seed saw
is printed beside the measured figure (study/report/seeds.py), never mixed into it.
The checks across device counts (scaling, data_ratio, best_method) are in
study/report/device_checks.py.
"""

from __future__ import annotations

import dataclasses

from tpubench.cost import epoch
from tpubench.study.report import bands, check_keys, device_checks, flips, seeds, sizing
from tpubench.study.report import judge as J
from tpubench.study.spec import standins

HOLDS, FAILS = J.HOLDS, J.FAILS


@dataclasses.dataclass(frozen=True)
class Verdict:
    finding: str
    measured: str
    verdict: str
    notes: tuple[str, ...] = ()  # what would flip a cost verdict, the price bases
    band: str = ""  # what the finding accepts, as its study file writes it
    stand_in: str = ""  # the stand-in a judged verdict rests on, and its control
    seed: str = ""  # what the finding's seed saw, shown beside the measured figure

    def line(self) -> str:
        band = f" (band: {self.band})" if self.band else ""
        verdict = f"**{self.verdict}**" + (f" ({self.stand_in})" if self.stand_in else "")
        seed = f"; seed: {self.seed}" if self.seed else ""
        text = f"- {self.finding}{band} — {self.measured}{seed}: {verdict}"
        return "\n".join([text, *[f"  - {n}" for n in self.notes]])


def _fmt(x: float) -> str:
    return f"{x:,.1f}" if x < 1000 else f"{x:,.0f}"


# -- the checks: (results, check) -> (measured text, verdict[, notes]) ----------


def _knee(r, c):
    part, (band,) = c["part"], bands.of(c)
    among = c.get("among") or [s.label for s in r.study.part(part).setups if s.vcpus]
    groups: dict = {}
    for m in r.of(part):
        if m.cell.setup.label in among:
            groups.setdefault((m.cell.model.model, m.cell.data), []).append(m)
    texts, verdicts, used = [], [], []
    for (model, data), ms in groups.items():
        if len(ms) < len(among):
            continue  # judged only over every size the finding names
        points = sorted(((m.cell.setup.vcpus, m) for m in ms), key=lambda p: p[0])
        used += ms
        best = max(m.rate for _, m in points)
        knee = next(v for v, m in points if m.rate >= 0.95 * best)
        best_lo = max((m.rate_ci or (m.rate, m.rate))[0] for _, m in points)
        best_hi = max((m.rate_ci or (m.rate, m.rate))[1] for _, m in points)
        early = next(v for v, m in points if (m.rate_ci or (m.rate, m.rate))[1] >= 0.95 * best_lo)
        late = next(
            (v for v, m in points if (m.rate_ci or (m.rate, m.rate))[0] >= 0.95 * best_hi),
            points[-1][0],
        )
        on = "CPU, which also does the arithmetic" if ms[0].accelerator == "cpu" else "GPU"
        spread = f" (within the intervals: {early}–{late})" if (early, late) != (knee, knee) else ""
        if knee == points[-1][0] and (band.hi is None or knee <= band.hi):
            texts.append(f"{model} ({data}, {on}) still gains at {knee} vCPUs, the most measured")
            verdicts.append(None)
            continue
        texts.append(f"here the rate stops gaining at {knee} vCPUs{spread} ({model}, {data}, {on})")
        inside = [band.accepts(k) for k in (early, late)]
        verdicts.append(HOLDS if all(inside) else FAILS if not any(inside) else J.NOISE)
    if not texts:
        labels = ", ".join(among)
        return f"not all of {labels} measured", J.not_measured(r.missing(part))
    if None in verdicts:
        return "; ".join(texts), J.not_measured(r.missing(part))
    return "; ".join(texts) + J.busy(used), J.verdict(r, used, J.combine(verdicts))


def _pairs(r, c, key_a: str, key_b: str, by: str = "setup"):
    """{model: (Measured a, Measured b)} for models measured under both."""
    a = {m.cell.model.model: m for m in r.of(c["part"], **{by: c[key_a]})}
    b = {m.cell.model.model: m for m in r.of(c["part"], **{by: c[key_b]})}
    if c.get("model"):
        a = {k: v for k, v in a.items() if k == c["model"]}
    return {k: (a[k], b[k]) for k in a if k in b}


def _ratio(r, c):
    pairs = _pairs(r, c, "a", "b")
    if not pairs:
        needs = r.missing(c["part"], setup=c["a"], model=c.get("model"))
        needs += r.missing(c["part"], setup=c["b"], model=c.get("model"))
        return f"{c['a']} vs {c['b']} not both measured", J.not_measured(needs)
    texts, verdicts, used = [], [], []
    for model, (a, b) in pairs.items():
        x, ci = a.rate / b.rate, J.ratio_ci(a, b)
        texts.append(
            f"{c['a']} {x:.2f}x{J.shown_ci(ci)} {c['b']} "
            f"({model}: {_fmt(a.rate)} vs {_fmt(b.rate)}/s{_machines(a, b)})"
        )
        verdicts.append(J.in_band(x, ci, bands.of(c)[0]))
        used += [a, b]
    return "; ".join(texts) + J.busy(used), J.verdict(r, used, J.combine(verdicts))


def _machines(a, b) -> str:
    """'; measured: A vs B' when the two sides ran on different kinds of device (a TPU VM
    against a GPU machine): a ratio of two devices means little without their names."""
    if a.accelerator == b.accelerator:
        return ""
    return f"; measured: {a.machine} vs {b.machine}"


def _most(verdicts: list[str]) -> str:
    """Holds for most models: a majority of HOLDS; within noise while noisy ones could tip it."""
    wins = verdicts.count(HOLDS)
    overall = HOLDS if wins * 2 > len(verdicts) else FAILS
    if J.NOISE in verdicts and (wins + verdicts.count(J.NOISE)) * 2 > len(verdicts) >= wins * 2:
        overall = J.NOISE  # the noisy models could still tip the majority
    return overall


def _about_equal(r, c):
    pairs = _pairs(r, c, "a", "b")
    if not pairs:
        needs = r.missing(c["part"], setup=c["a"]) + r.missing(c["part"], setup=c["b"])
        return f"{c['a']} vs {c['b']} not both measured", J.not_measured(needs)
    (band,), texts, verdicts, used = bands.of(c), [], [], []
    for model, (a, b) in pairs.items():
        x, ci = a.rate / b.rate, J.ratio_ci(a, b)
        texts.append(f"{x:.2f}x{J.shown_ci(ci)} ({model})")
        verdicts.append(J.in_band(x, ci, band))
        used += [a, b]
    text = f"{c['a']} runs at {', '.join(texts)} of {c['b']}{J.busy(used)}"
    return text, J.verdict(r, used, J.combine(verdicts))


def _cheapest(r, c):
    part = r.study.part(c["part"])
    among = c.get("among") or [s.label for s in part.setups]
    texts, verdicts, notes, used = [], [], [], []
    for item in part.models:
        ms = {m.cell.setup.label: m for m in r.of(c["part"], model=item.model)}
        priced = {k: ms[k] for k in among if k in ms and ms[k].usd_epoch}
        if len(priced) < len(among):
            continue  # judged only among every setup the finding names
        used += list(priced.values())
        best = min(priced, key=lambda k: priced[k].usd_epoch)
        second = min((k for k in priced if k != best), key=lambda k: priced[k].usd_epoch)
        sure = J.apart(priced[best], priced[second], "usd_epoch")
        texts.append(f"{best} cheapest for {item.model}" + ("" if sure else " (within noise)"))
        # the setup's $/epoch over the cheapest other's, against the band (a margin)
        mine = priced[c["setup"]]
        other = min((m for k, m in priced.items() if k != c["setup"]), key=lambda m: m.usd_epoch)
        x, ci = mine.usd_epoch / other.usd_epoch, J.ratio_ci(mine, other, "usd_epoch")
        verdicts.append(J.in_band(x, ci, bands.of(c)[0]))
        notes += [f"{item.model}: {line}" for line in flips.flip_lines(priced)]
        unit = epoch.note([(k, *m.epoch) for k, m in priced.items()])
        notes += [f"{item.model}: {unit}"] if unit else []
        basis = flips.basis_line(priced)
        notes += [f"{item.model}: {basis}"] if basis else []
    if not texts:
        needs = [n for label in among for n in r.missing(c["part"], setup=label)]
        return f"not all of {', '.join(among)} measured", J.not_measured(needs)
    # What would flip a cost verdict is a verdict too: none before the cells can carry one.
    notes = [] if J.gate(r, used) else notes
    return "; ".join(texts) + J.busy(used), J.verdict(r, used, _most(verdicts)), tuple(notes)


def _fastest(r, c):
    """The setup's rate over the fastest other's, among the setups named, for most models."""
    part = r.study.part(c["part"])
    among = c.get("among") or [s.label for s in part.setups]
    texts, verdicts, used = [], [], []
    for item in part.models:
        ms = {m.cell.setup.label: m for m in r.of(c["part"], model=item.model)}
        got = {k: ms[k] for k in among if k in ms}
        if len(got) < len(among):
            continue  # judged only among every setup the finding names
        used += list(got.values())
        ranked = sorted(got, key=lambda k: got[k].rate, reverse=True)
        sure = J.apart(got[ranked[1]], got[ranked[0]])
        texts.append(f"{ranked[0]} fastest for {item.model}" + ("" if sure else " (within noise)"))
        mine = got[c["setup"]]
        other = max((m for k, m in got.items() if k != c["setup"]), key=lambda m: m.rate)
        x, ci = mine.rate / other.rate, J.ratio_ci(mine, other)
        verdicts.append(J.in_band(x, ci, bands.of(c)[0]))
    if not texts:
        needs = [n for label in among for n in r.missing(c["part"], setup=label)]
        return f"not all of {', '.join(among)} measured", J.not_measured(needs)
    return "; ".join(texts) + J.busy(used), J.verdict(r, used, _most(verdicts))


def _slowest(r, c):
    part = r.study.part(c["part"])
    among = c.get("among") or [s.label for s in part.setups]
    ms = {m.cell.setup.label: m for m in r.of(c["part"], model=c["model"])}
    ms = {k: v for k, v in ms.items() if k in among}
    if len(ms) < len(among):
        needs = [n for label in among for n in r.missing(c["part"], setup=label, model=c["model"])]
        return f"not all of {', '.join(among)} measured", J.not_measured(needs)
    mine = ms.pop(c["setup"])
    slow = min(ms.values(), key=lambda m: m.rate)
    text = (
        f"{c['setup']} {_fmt(mine.rate)}/s vs the slowest other {_fmt(slow.rate)}/s ({c['model']})"
    )
    verdict = J.in_band(mine.rate / slow.rate, J.ratio_ci(mine, slow), bands.of(c)[0])
    used = [mine, *ms.values()]
    return text + J.busy(used), J.verdict(r, used, verdict)


def _unmeasurable(_r, c):
    return "no cell of this study measures it", f"not measured (needs {c['needs']})"


_EVAL = {
    "knee": _knee,
    "ratio": _ratio,
    "about_equal": _about_equal,
    "cheapest": _cheapest,
    "slowest": _slowest,
    "fastest": _fastest,
    "scaling": device_checks.scaling,
    "data_ratio": device_checks.data_ratio,
    "best_method": device_checks.best_method,
    "sizing": lambda r, c: sizing.check(r, c, J.not_measured),
    "unmeasurable": _unmeasurable,
}


CHECKS = {kind: check_keys.validate for kind in check_keys.KEYS}  # spec.load checks each


def check_all(results) -> list[Verdict]:
    """One Verdict per finding of the study, in the file's order."""
    out = []
    for f in results.study.findings:
        measured, verdict, *notes = _EVAL[f.check["kind"]](results, f.check)
        judged = verdict in (HOLDS, FAILS, J.NOISE)
        part = results.study.part(f.check["part"]) if "part" in f.check else None
        stand_in = standins.note(f.check, part) if judged and part else ""
        notes = tuple(notes[0]) if notes else ()
        seed = seeds.quote(results.study.name, f.text)
        shown = bands.shown(f.check)
        out.append(Verdict(f.text, measured, verdict, notes, shown, stand_in, seed))
    return out
