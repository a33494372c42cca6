"""A study's findings, checked against its measured cells: one line each.

Every check returns what was measured and a verdict: `holds`, `does not
hold here`, `within noise` (the 95% interval spans an edge of the finding's
band, study/bands.py), `not judged (...)` (smoke scale, or fewer runs than
the study's repeats) or `not measured (needs ...)`, naming what the missing
cells need (a GPU, more vCPUs, a gs:// copy of the data).  A check that
names setups (`among`, the knee's vCPU sizes) judges only when all of them
are measured.  A verdict on a stand-in (an emulated disk, a memory cap)
says so and names its control (study/standins.py).  Only measured cells are
used; published figures never decide a verdict.
"""

from __future__ import annotations

import dataclasses

from tpubench.core import errors
from tpubench.study import bands, flips, sizing, standins
from tpubench.study import judge as J

HOLDS, FAILS = J.HOLDS, J.FAILS


@dataclasses.dataclass(frozen=True)
class Verdict:
    finding: str
    measured: str
    verdict: str
    notes: tuple[str, ...] = ()  # what would flip a cost verdict, the price bases
    band: str = ""  # what the finding accepts, as its study file writes it
    stand_in: str = ""  # the stand-in a judged verdict rests on, and its control

    def line(self) -> str:
        band = f" (band: {self.band})" if self.band else ""
        verdict = f"**{self.verdict}**" + (f" ({self.stand_in})" if self.stand_in else "")
        text = f"- {self.finding}{band} — {self.measured}: {verdict}"
        return "\n".join([text, *[f"  - {n}" for n in self.notes]])


def _not_measured(needs: list[str]) -> str:
    said = [n.removeprefix("needs ") for n in list(dict.fromkeys(needs))[:2]]
    return f"not measured (needs {'; '.join(said) or 'a run of `tpubench study run`'})"


def _fmt(x: float) -> str:
    return f"{x:,.1f}" if x < 1000 else f"{x:,.0f}"


def _busy(ms) -> str:
    return " [measured on a busy host]" if any(m.busy for m in ms) else ""


def _verdict(results, ms: list, verdict: str) -> str:
    """VERDICT, unless the cells cannot carry one yet (smoke, too few runs)."""
    return J.gate(results, ms) or verdict


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
        return f"not all of {labels} measured", _not_measured(r.missing(part))
    if None in verdicts:
        return "; ".join(texts), _not_measured(r.missing(part))
    return "; ".join(texts) + _busy(used), _verdict(r, used, J.combine(verdicts))


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
        return f"{c['a']} vs {c['b']} not both measured", _not_measured(needs)
    texts, verdicts, used = [], [], []
    for model, (a, b) in pairs.items():
        x, ci = a.rate / b.rate, J.ratio_ci(a, b)
        texts.append(
            f"{c['a']} {x:.2f}x{J.shown_ci(ci)} {c['b']} "
            f"({model}: {_fmt(a.rate)} vs {_fmt(b.rate)}/s)"
        )
        verdicts.append(J.in_band(x, ci, bands.of(c)[0]))
        used += [a, b]
    return "; ".join(texts) + _busy(used), _verdict(r, used, J.combine(verdicts))


def _about_equal(r, c):
    pairs = _pairs(r, c, "a", "b")
    if not pairs:
        needs = r.missing(c["part"], setup=c["a"]) + r.missing(c["part"], setup=c["b"])
        return f"{c['a']} vs {c['b']} not both measured", _not_measured(needs)
    (band,), texts, verdicts, used = bands.of(c), [], [], []
    for model, (a, b) in pairs.items():
        x, ci = a.rate / b.rate, J.ratio_ci(a, b)
        texts.append(f"{x:.2f}x{J.shown_ci(ci)} ({model})")
        verdicts.append(J.in_band(x, ci, band))
        used += [a, b]
    text = f"{c['a']} runs at {', '.join(texts)} of {c['b']}{_busy(used)}"
    return text, _verdict(r, used, J.combine(verdicts))


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
        basis = flips.basis_line(priced)
        notes += [f"{item.model}: {basis}"] if basis else []
    if not texts:
        needs = [n for label in among for n in r.missing(c["part"], setup=label)]
        return f"not all of {', '.join(among)} measured", _not_measured(needs)
    wins = verdicts.count(HOLDS)
    overall = HOLDS if wins * 2 > len(verdicts) else FAILS
    if J.NOISE in verdicts and (wins + verdicts.count(J.NOISE)) * 2 > len(verdicts) >= wins * 2:
        overall = J.NOISE  # the noisy models could still tip the majority
    return "; ".join(texts) + _busy(used), _verdict(r, used, overall), tuple(notes)


def _slowest(r, c):
    part = r.study.part(c["part"])
    among = c.get("among") or [s.label for s in part.setups]
    ms = {m.cell.setup.label: m for m in r.of(c["part"], model=c["model"])}
    ms = {k: v for k, v in ms.items() if k in among}
    if len(ms) < len(among):
        needs = [n for label in among for n in r.missing(c["part"], setup=label, model=c["model"])]
        return f"not all of {', '.join(among)} measured", _not_measured(needs)
    mine = ms.pop(c["setup"])
    slow = min(ms.values(), key=lambda m: m.rate)
    text = (
        f"{c['setup']} {_fmt(mine.rate)}/s vs the slowest other {_fmt(slow.rate)}/s ({c['model']})"
    )
    verdict = J.in_band(mine.rate / slow.rate, J.ratio_ci(mine, slow), bands.of(c)[0])
    used = [mine, *ms.values()]
    return text + _busy(used), _verdict(r, used, verdict)


def _scaling(r, c):
    series: dict = {}
    for m in r.of(c["part"]):
        if m.cell.device(r.host) != c.get("device", m.cell.device(r.host)):
            continue
        key = (m.cell.model.model, m.cell.data)
        series.setdefault(key, {})[m.cell.setup.devices] = m
    texts, verdicts, used = [], [], []
    for (model, data), points in series.items():
        if len(points) < 2:
            continue
        lo, hi = min(points), max(points)
        ideal = hi / lo
        eff = 100 * points[hi].rate / (points[lo].rate * ideal)
        ci = J.ratio_ci(points[hi], points[lo])
        ci = (100 * ci[0] / ideal, 100 * ci[1] / ideal) if ci else None
        texts.append(
            f"{eff:.0f}%{J.shown_ci(ci, '{:.0f}')} of ideal at {hi} devices ({model}, {data})"
        )
        verdicts.append(J.in_band(eff, ci, bands.of(c)[0]))
        used += [points[lo], points[hi]]
    if not texts:
        return "fewer than two device counts measured", _not_measured(r.missing(c["part"]))
    return "; ".join(texts) + _busy(used), _verdict(r, used, J.combine(verdicts))


def _data_ratio(r, c):
    groups: dict = {}
    for m in r.of(c["part"]):
        if c.get("device") and m.cell.device(r.host) != c["device"]:
            continue
        groups.setdefault((m.cell.model.model, m.cell.setup.label), {})[m.cell.data] = m
    texts, verdicts, used = [], [], []
    for (model, label), ms in groups.items():
        if c["a"] not in ms or c["b"] not in ms:
            continue
        a, b = ms[c["a"]], ms[c["b"]]
        loss = 1 - b.rate / a.rate
        texts.append(f"{c['b']} {100 * -loss:+.0f}% vs {c['a']} ({model}, {label})")
        used += [a, b]
        if model in c.get("except", []):
            continue
        verdicts.append(J.in_band(b.rate / a.rate, J.ratio_ci(b, a), bands.of(c)[0]))
    if not texts:
        return f"{c['a']} and {c['b']} not both measured", _not_measured(r.missing(c["part"]))
    if not verdicts:  # only the excepted models measured
        return "; ".join(texts) + _busy(used), _not_measured(r.missing(c["part"]))
    return "; ".join(texts) + _busy(used), _verdict(r, used, J.combine(verdicts))


def _best_method(r, c):
    table: dict = {}
    for m in r.of(c["part"]):
        if c.get("device") and m.cell.device(r.host) != c["device"]:
            continue
        if c.get("models") and m.cell.model.model not in c["models"]:
            continue
        how = bands.method(m.cell.setup)
        if how and how not in c.get("except", []):
            table.setdefault((m.cell.model.model, m.cell.setup.devices), {})[how] = m
    chosen: dict = {}
    for (model, n), ms in table.items():
        if len(ms) < 2 or (c.get("devices") and n != c["devices"]):
            continue
        if model not in chosen or n > chosen[model][0]:
            chosen[model] = (n, ms)
    if not chosen:
        n = c.get("devices")
        labels = [s.label for s in r.study.part(c["part"]).setups if not n or s.devices == n]
        needs = [x for label in labels for x in r.missing(c["part"], setup=label)]
        return "fewer than two methods measured", _not_measured(needs)
    texts, verdicts, used = [], [], []
    for model, (n, ms) in chosen.items():
        ranked = sorted(ms, key=lambda k: ms[k].rate, reverse=True)
        best, second = ranked[0], ranked[1]
        sure = J.apart(ms[second], ms[best])
        texts.append(
            f"{best} fastest for {model} at {n} devices" + ("" if sure else " (within noise)")
        )
        verdicts.append(J.NOISE if not sure else HOLDS if best in c["expect"] else FAILS)
        used += list(ms.values())
    return "; ".join(texts) + _busy(used), _verdict(r, used, J.combine(verdicts))


def _unmeasurable(_r, c):
    return "no cell of this study measures it", f"not measured (needs {c['needs']})"


# -- validation of each kind's keys -------------------------------------------

_KEYS = {
    "knee": (("part", "band"), ("among",)),
    "ratio": (("part", "a", "b", "band"), ("model",)),
    "about_equal": (("part", "a", "b", "band"), ("model",)),
    "cheapest": (("part", "setup", "band"), ("among",)),
    "slowest": (("part", "setup", "model", "band"), ("among",)),
    "scaling": (("part", "band"), ("device",)),
    "data_ratio": (("part", "a", "b", "band"), ("except", "device")),
    "best_method": (("part", "expect"), ("device", "devices", "models", "except")),
    "sizing": (("part", "band"), ()),
    "unmeasurable": (("needs",), ()),
}
_EVAL = {
    "knee": _knee,
    "ratio": _ratio,
    "about_equal": _about_equal,
    "cheapest": _cheapest,
    "slowest": _slowest,
    "scaling": _scaling,
    "data_ratio": _data_ratio,
    "best_method": _best_method,
    "sizing": lambda r, c: sizing.check(r, c, _not_measured),
    "unmeasurable": _unmeasurable,
}


def _validate(check: dict, parts, where: str) -> None:
    required, optional = _KEYS[check["kind"]]
    for key in required:
        if key not in check:
            raise errors.UsageError(f"{where}: kind {check['kind']} needs '{key}'")
    for key in check:
        if key not in ("kind", *required, *optional):
            raise errors.unknown(
                f"key in {where} (kind {check['kind']}):", key, required + optional
            )
    part = next((p for p in parts if p.name == check.get("part")), None)
    labels = [s.label for s in part.setups] if part else []
    uses_labels = check["kind"] in ("ratio", "about_equal", "cheapest", "slowest", "knee")
    for key in ("a", "b", "setup") if uses_labels else ():
        if key in check and check[key] not in labels:
            raise errors.unknown(f"setup label in {where}.{key}:", str(check[key]), labels)
    for label in check.get("among") or []:
        if label not in labels:
            raise errors.unknown(f"setup label in {where}.among:", str(label), labels)
    models = [m.model for m in part.models] if part else []
    for model in [check.get("model")] + list(check.get("models") or []):
        if model and model not in models:
            raise errors.unknown(f"model in {where}:", str(model), models)
    if part:
        bands.validate(check, part, where)
        standins.validate(check, part, where)


CHECKS = {kind: _validate for kind in _KEYS}


def check_all(results) -> list[Verdict]:
    """One Verdict per finding of the study, in the file's order."""
    out = []
    for f in results.study.findings:
        measured, verdict, *notes = _EVAL[f.check["kind"]](results, f.check)
        judged = verdict in (HOLDS, FAILS, J.NOISE)
        part = results.study.part(f.check["part"]) if "part" in f.check else None
        stand_in = standins.note(f.check, part) if judged and part else ""
        notes = tuple(notes[0]) if notes else ()
        out.append(Verdict(f.text, measured, verdict, notes, bands.shown(f.check), stand_in))
    return out
