"""Findings across device counts: scaling, real vs synthetic data, the fastest gradient method.

Each check takes the cells its finding names and no others: `models` (these
models only), `data` (these data kinds), `devices` (these device counts;
one count or a list) and `device` (gpu, cpu).  A seed's sentence is about
particular models and GPU counts (tf_cnn_benchmarks: the parameter-server
models scale to 8 GPUs, AlexNet's real data saturates the pipeline), so a
finding that pools every model would judge a claim the seed never made.

Each returns (what was measured, its verdict) as study/report/findings.py's checks do.
"""

from __future__ import annotations

from tpubench.study.report import bands
from tpubench.study.report import judge as J


def picked(r, m, c) -> bool:
    """Whether cell M is among the device, models, data and device counts check C names."""
    if c.get("device") and m.cell.device(r.host) != c["device"]:
        return False
    if c.get("models") and m.cell.model.model not in c["models"]:
        return False
    if c.get("data") and m.cell.data not in bands.each(c["data"]):
        return False
    return not c.get("devices") or m.cell.setup.devices in bands.each(c["devices"])


def needs(r, c, labels=(None,)) -> list[str]:
    """What the unmeasured cells of the setups LABELS and the models C names need (every
    model when it names none); a machine that is missing before a scale that lacks a model."""
    got = [
        n
        for label in labels
        for model in c.get("models") or [None]
        for n in r.missing(c["part"], setup=label, model=model)
    ]
    machines = [n for n in got if not n.startswith("a scale that has")]
    return machines or got


def scaling(r, c):
    """The rate at the most devices over ideal (from the fewest), per model and data kind."""
    series: dict = {}
    for m in r.of(c["part"]):
        if picked(r, m, c):
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
        return "fewer than two device counts measured", J.not_measured(needs(r, c))
    return "; ".join(texts) + J.busy(used), J.verdict(r, used, J.combine(verdicts))


def data_ratio(r, c):
    """Data kind B's rate over A's within each setup (`except`: models shown, not judged)."""
    groups: dict = {}
    for m in r.of(c["part"]):
        if picked(r, m, c):
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
        return f"{c['a']} and {c['b']} not both measured", J.not_measured(needs(r, c))
    if not verdicts:  # only the excepted models measured
        return "; ".join(texts) + J.busy(used), J.not_measured(needs(r, c))
    return "; ".join(texts) + J.busy(used), J.verdict(r, used, J.combine(verdicts))


def best_method(r, c):
    """The fastest gradient method per model: at each count `devices` names, else at the most."""
    table: dict = {}
    for m in r.of(c["part"]):
        if not picked(r, m, c):
            continue
        how = bands.method(m.cell.setup)
        if how and how not in c.get("except", []):
            table.setdefault((m.cell.model.model, m.cell.setup.devices), {})[how] = m
    compared = {key: ms for key, ms in table.items() if len(ms) >= 2}
    if not c.get("devices"):  # the most devices each model was compared on
        most = {model: n for (model, n) in compared}
        for model, n in compared:
            most[model] = max(most[model], n)
        compared = {(model, n): ms for (model, n), ms in compared.items() if most[model] == n}
    if not compared:
        counts = bands.each(c.get("devices"))
        labels = [
            s.label for s in r.study.part(c["part"]).setups if not counts or s.devices in counts
        ]
        return "fewer than two methods measured", J.not_measured(needs(r, c, labels))
    texts, verdicts, used = [], [], []
    for (model, n), ms in compared.items():
        ranked = sorted(ms, key=lambda k: ms[k].rate, reverse=True)
        best, second = ranked[0], ranked[1]
        sure = J.apart(ms[second], ms[best])
        texts.append(
            f"{best} fastest for {model} at {n} devices" + ("" if sure else " (within noise)")
        )
        verdicts.append(J.NOISE if not sure else J.HOLDS if best in c["expect"] else J.FAILS)
        used += list(ms.values())
    return "; ".join(texts) + J.busy(used), J.verdict(r, used, J.combine(verdicts))
