"""A study's findings, checked against its measured cells: one line each.

Every check returns what was measured and one of three verdicts: `holds`,
`does not hold here`, or `not measured (needs ...)`, naming what the
missing cells need (a GPU, more vCPUs, a gs:// copy of the data).  Only
measured cells are used; published figures never decide a verdict.
"""

from __future__ import annotations

import dataclasses

from tpubench.core import errors

HOLDS = "holds"
FAILS = "does not hold here"


@dataclasses.dataclass(frozen=True)
class Verdict:
    finding: str
    measured: str
    verdict: str

    def line(self) -> str:
        return f"- {self.finding} — {self.measured}: **{self.verdict}**"


def _not_measured(needs: list[str]) -> str:
    said = [n.removeprefix("needs ") for n in list(dict.fromkeys(needs))[:2]]
    return f"not measured (needs {'; '.join(said) or 'a run of `tpubench study run`'})"


def method(setup) -> str | None:
    """How a multi-device setup combines gradients: its all-reduce or strategy."""
    if setup.devices < 2:
        return None
    return setup.all_reduce or setup.strategy or "auto"


def _fmt(x: float) -> str:
    return f"{x:,.1f}" if x < 1000 else f"{x:,.0f}"


# -- the checks: (results, check) -> (measured text, verdict) ------------------


def _knee(r, c):
    part = c["part"]
    groups: dict = {}
    for m in r.of(part):
        groups.setdefault((m.cell.model.model, m.cell.data), []).append(m)
    texts, verdicts = [], []
    for (model, data), ms in groups.items():
        points = sorted((m.cell.setup.vcpus, m.rate) for m in ms if m.cell.setup.vcpus)
        if len(points) < 2:
            continue
        best = max(rate for _, rate in points)
        knee = next(v for v, rate in points if rate >= 0.95 * best)
        on = "CPU, which also does the arithmetic" if ms[0].accelerator == "cpu" else "GPU"
        if knee == points[-1][0] and knee < 2 * c["expect"]:
            texts.append(f"{model} ({data}, {on}) still gains at {knee} vCPUs, the most measured")
            verdicts.append(None)
            continue
        texts.append(f"here the rate stops gaining at {knee} vCPUs ({model}, {data}, {on})")
        verdicts.append(c["expect"] / 2 <= knee <= 2 * c["expect"])
    if not texts:
        return "fewer than two vCPU sizes measured", _not_measured(r.missing(part))
    if None in verdicts:
        return "; ".join(texts), _not_measured(r.missing(part))
    return "; ".join(texts), HOLDS if all(verdicts) else FAILS


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
    texts, ok = [], True
    for model, (a, b) in pairs.items():
        x = a.rate / b.rate
        texts.append(f"{c['a']} {x:.2f}x {c['b']} ({model}: {_fmt(a.rate)} vs {_fmt(b.rate)}/s)")
        ok &= x >= c["min"]
    return "; ".join(texts), HOLDS if ok else FAILS


def _about_equal(r, c):
    pairs = _pairs(r, c, "a", "b")
    if not pairs:
        needs = r.missing(c["part"], setup=c["a"]) + r.missing(c["part"], setup=c["b"])
        return f"{c['a']} vs {c['b']} not both measured", _not_measured(needs)
    xs = {model: a.rate / b.rate for model, (a, b) in pairs.items()}
    text = ", ".join(f"{x:.2f}x ({model})" for model, x in xs.items())
    ok = all(abs(x - 1) <= c.get("within", 0.1) for x in xs.values())
    return f"{c['a']} runs at {text} of {c['b']}", HOLDS if ok else FAILS


def _cheapest(r, c):
    part = r.study.part(c["part"])
    among = c.get("among") or [s.label for s in part.setups]
    wins, texts, complete = 0, [], 0
    for item in part.models:
        ms = {m.cell.setup.label: m for m in r.of(c["part"], model=item.model)}
        priced = {k: m for k, m in ms.items() if k in among and m.usd_epoch}
        if c["setup"] not in priced or len(priced) < 2:
            continue
        complete += set(among) <= set(priced)
        best = min(priced, key=lambda k: priced[k].usd_epoch)
        wins += best == c["setup"]
        texts.append(f"{best} cheapest for {item.model}")
    if not texts or not complete:
        needs = [n for label in among for n in r.missing(c["part"], setup=label)]
        shown = "; ".join(texts) + " (of the setups measured)" if texts else "not measured"
        return shown, _not_measured(needs)
    return "; ".join(texts), HOLDS if wins * 2 > len(texts) else FAILS


def _slowest(r, c):
    ms = {m.cell.setup.label: m for m in r.of(c["part"], model=c["model"])}
    if c["setup"] not in ms or len(ms) < 2:
        needs = r.missing(c["part"], setup=c["setup"], model=c["model"]) or r.missing(c["part"])
        return f"{c['setup']} and another setup not both measured", _not_measured(needs)
    mine = ms.pop(c["setup"])
    slowest = min(m.rate for m in ms.values())
    text = f"{c['setup']} {_fmt(mine.rate)}/s vs the slowest other {_fmt(slowest)}/s ({c['model']})"
    return text, HOLDS if mine.rate < slowest else FAILS


def _scaling(r, c):
    series: dict = {}
    for m in r.of(c["part"]):
        if m.cell.device(r.host) != c.get("device", m.cell.device(r.host)):
            continue
        key = (m.cell.model.model, m.cell.data)
        series.setdefault(key, {})[m.cell.setup.devices] = m.rate
    texts, ok = [], True
    for (model, data), points in series.items():
        if len(points) < 2:
            continue
        lo, hi = min(points), max(points)
        eff = 100 * points[hi] / (points[lo] * hi / lo)
        texts.append(f"{eff:.0f}% of ideal at {hi} devices ({model}, {data})")
        ok &= eff >= c["min_efficiency"]
    if not texts:
        return "fewer than two device counts measured", _not_measured(r.missing(c["part"]))
    return "; ".join(texts), HOLDS if ok else FAILS


def _data_ratio(r, c):
    groups: dict = {}
    for m in r.of(c["part"]):
        if c.get("device") and m.cell.device(r.host) != c["device"]:
            continue
        groups.setdefault((m.cell.model.model, m.cell.setup.label), {})[m.cell.data] = m.rate
    texts, ok = [], True
    for (model, label), rates in groups.items():
        if c["a"] not in rates or c["b"] not in rates:
            continue
        loss = 1 - rates[c["b"]] / rates[c["a"]]
        texts.append(f"{c['b']} {100 * -loss:+.0f}% vs {c['a']} ({model}, {label})")
        if model in c.get("except", []):
            continue
        if "min_loss" in c:
            ok &= loss >= c["min_loss"]
        if "max_loss" in c:
            ok &= loss <= c["max_loss"]
    if not texts:
        return f"{c['a']} and {c['b']} not both measured", _not_measured(r.missing(c["part"]))
    return "; ".join(texts), HOLDS if ok else FAILS


def _best_method(r, c):
    table: dict = {}
    for m in r.of(c["part"]):
        if c.get("device") and m.cell.device(r.host) != c["device"]:
            continue
        if c.get("models") and m.cell.model.model not in c["models"]:
            continue
        how = method(m.cell.setup)
        if how:
            table.setdefault((m.cell.model.model, m.cell.setup.devices), {})[how] = m.rate
    chosen: dict = {}
    for (model, n), rates in table.items():
        if len(rates) < 2 or (c.get("devices") and n != c["devices"]):
            continue
        if model not in chosen or n > chosen[model][0]:
            chosen[model] = (n, max(rates, key=rates.get))
    if not chosen:
        n = c.get("devices")
        labels = [s.label for s in r.study.part(c["part"]).setups if not n or s.devices == n]
        needs = [x for label in labels for x in r.missing(c["part"], setup=label)]
        return "fewer than two methods measured", _not_measured(needs)
    texts = [f"{best} fastest for {model} at {n} devices" for model, (n, best) in chosen.items()]
    ok = all(best in c["expect"] for _, best in chosen.values())
    return "; ".join(texts), HOLDS if ok else FAILS


def _unmeasurable(_r, c):
    return "no cell of this study measures it", f"not measured (needs {c['needs']})"


# -- validation of each kind's keys -------------------------------------------

_KEYS = {
    "knee": (("part", "expect"), ()),
    "ratio": (("part", "a", "b", "min"), ("model",)),
    "about_equal": (("part", "a", "b"), ("within", "model")),
    "cheapest": (("part", "setup"), ("among",)),
    "slowest": (("part", "setup", "model"), ()),
    "scaling": (("part", "min_efficiency"), ("device",)),
    "data_ratio": (("part", "a", "b"), ("min_loss", "max_loss", "except", "device")),
    "best_method": (("part", "expect"), ("device", "devices", "models")),
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
    uses_labels = check["kind"] in ("ratio", "about_equal", "cheapest", "slowest")
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


CHECKS = {kind: _validate for kind in _KEYS}


def check_all(results) -> list[Verdict]:
    """One Verdict per finding of the study, in the file's order."""
    out = []
    for f in results.study.findings:
        measured, verdict = _EVAL[f.check["kind"]](results, f.check)
        out.append(Verdict(f.text, measured, verdict))
    return out
