"""What `tpubench advise` warns of below its answer: where measured figures may mislead.

`warnings`: records that are old, come from another TensorFlow version,
were input-bound or never checked, measured a tiny variant, or were priced
from this host's vCPU count; `spot_note`: what a spot pick assumes about
the training a stopped machine loses.  report/advise.py prints them.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata

from tpubench.core import config, durations
from tpubench.core.config import AdviseConfig
from tpubench.report import group as group_lib
from tpubench.report import load

_TF_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-tpu", "tf-nightly")


def installed_tf_version() -> str | None:
    """The installed TensorFlow's version from package metadata (TensorFlow is not imported)."""
    for name in _TF_DISTRIBUTIONS:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def warnings(groups: list[group_lib.Group], cfg: AdviseConfig, now: dt.datetime) -> list[str]:
    """Where GROUPS' records may mislead the advice: old at NOW, another TensorFlow,
    input-bound or unchecked, tiny variants, host-priced CPU runs."""
    runs = [r for g in groups for r in g.runs]
    out = []
    old = []
    for r in runs:
        try:
            finished = dt.datetime.fromisoformat(r.finished or "")
        except ValueError:
            continue
        if finished.tzinfo is None:
            finished = finished.replace(tzinfo=dt.timezone.utc)
        if (now - finished).days > cfg.max_age_days:
            old.append(r)
    if old:
        newest = max(r.finished for r in old)[:10]
        out.append(
            f"{len(old)} of {len(runs)} records are older than {cfg.max_age_days:g} days "
            f"(newest of them {newest}): software and prices may have moved; rerun them"
        )
    want = cfg.tf_version or installed_tf_version()
    versions = sorted({r.tf_version or "?" for r in runs})
    if want and any(v != want for v in versions):
        out.append(
            f"records come from TensorFlow {', '.join(versions)}; this installation has {want}"
        )
    elif len(versions) > 1:
        out.append(f"records come from several TensorFlow versions: {', '.join(versions)}")
    bound = [r for r in runs if load.input_bound(r.input_verdict)]
    if bound:
        labels = sorted({g.label for g in groups for r in g.runs if r in bound})
        out.append(
            f"input-bound (--compare_synthetic): {'; '.join(labels)}: faster hardware will not "
            "help them until the input pipeline keeps up"
        )
    # Synthetic data never leaves the device: no input pipeline to be bound by.
    real = [r for r in runs if r.dims["dataset"] != "synthetic"]
    unknown = sum((r.input_verdict or "unknown").startswith("unknown") for r in real)
    if unknown:
        out.append(
            f"{unknown} of {len(real)} records on real data have no input-bound check (unknown "
            "whether the input pipeline limited them; train with --compare_synthetic to know)"
        )
    if any(g.dims["tiny"] for g in groups):
        out.append(
            "some records measured --tiny variants: they predict little about the full model"
        )
    if any("host's vCPU count" in (r.price_note or "") for r in runs):
        out.append(
            "CPU runs without --machine were measured on this host and priced as cloud VMs of its "
            "vCPU count"
        )
    return out


def spot_note(groups: list[group_lib.Group]) -> str:
    """What a spot pick assumes: a stopped machine loses at most the checkpoint interval
    its runs used (their records' --checkpoint_every), else train's default."""
    known = sorted({r.checkpoint_every for g in groups for r in g.runs} - {None})
    if known:
        shown = dict.fromkeys(durations.short(x) for x in (known[0], known[-1]))
        said, source = " to ".join(shown), "as these runs did"
    else:  # records from before the default, or with it turned off
        said, source = durations.short(config.CHECKPOINT_EVERY_SECONDS), "train's default"
    return (
        "spot/preemptible machines can be stopped at any time; assumed: a checkpoint every "
        f"{said} ({source}, --checkpoint_every), so a stop loses at most that much training "
        "and the same command resumes; the times above leave that loss out"
    )
