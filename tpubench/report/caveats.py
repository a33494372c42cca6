"""The warnings a report prints above its tables: what a reader must know before the figures.

`lines` is computed once from the summaries and the loaded runs; `tpubench
report` (cli/report.py) shows them on the console, in report.md and in the
HTML page.
"""

from __future__ import annotations

from tpubench.core import money
from tpubench.core.basis import Basis
from tpubench.report import load


def lines(summaries, notes, loaded, pricing: Basis = Basis.ON_DEMAND) -> list[str]:
    """NOTES, then what the reader must know of SUMMARIES and LOADED's runs: price
    dates and bases, trial counts, TensorFlow versions, tiny variants, input-bound
    runs, host-priced CPU runs, excluded records."""
    out = list(notes)
    dates = {d for s in summaries for d in s.price_dates}
    if dates:  # every price used says how old it is
        from tpubench.cost import catalog

        out.append(f"costs use {money.prices_on(pricing)}, {catalog.age_note(dates)}")
    unpriced = [r.run_id for r in loaded.runs if r.pricing is None]
    if unpriced:
        other = pricing.other
        out.append(
            f"{len(unpriced)} run(s) have no {money.basis(pricing)} price in their record, so "
            f"their $ columns read n/a (--pricing={other} may price them): "
            f"{', '.join(unpriced[:4])}{' …' if len(unpriced) > 4 else ''}"
        )
    single = [s.label for s in summaries if s.rate.n == 1]
    if single:
        out.append(
            f"{len(single)} configuration(s) have a single trial and no interval (repeat the run "
            f"to get one): {'; '.join(single[:4])}{' …' if len(single) > 4 else ''}"
        )
    few = [s for s in summaries if 2 <= s.rate.n < 6]
    if few:
        out.append(
            f"{len(few)} configuration(s) have 2-5 trials: their interval is the range, at the "
            "confidence shown (6 or more trials give 95%)"
        )
    versions = sorted({v for s in summaries for v in s.tf_versions})
    if len(versions) > 1:
        out.append(f"runs come from several TensorFlow versions: {', '.join(versions)}")
    if any(s.group.dims["tiny"] for s in summaries):
        out.append("--tiny variants: the figures measure small test networks, not the full models")
    bound = [s.label for s in summaries if any(map(load.input_bound, s.input_verdicts))]
    if bound:
        out.append(f"input-bound runs: {'; '.join(bound)}")
    if any("host's vCPU count" in (r.price_note or "") for s in summaries for r in s.group.runs):
        out.append(
            "CPU runs without --machine were measured on this host and priced as cloud VMs "
            "with its vCPU count"
        )
    if loaded.excluded:
        out.append(
            f"{len(loaded.excluded)} record(s) excluded (see 'Records that are not results')"
        )
    return out
