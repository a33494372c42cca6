"""`tpubench advise`: picks, runner-ups and warnings worked out by hand.

Fixtures: resnet50 on 1/2/4 V100 (n1-standard-8 host: no spot price in the
catalog) at median 200/390/700 images/s, and on TPU v5e-4/-8 at 1550/3000;
an ImageNet epoch is 1,281,167 images.  Prices from a fixed catalog
(fixtures/prices/advise.csv, rows dated 2025-01-01), so a refresh of the
shipped one changes no figure here: V100 $2.48/h, n1-standard-8
$0.379998/h, v5e $1.20/h on demand and $0.213/h spot per chip.
"""

import datetime as dt
import pathlib

import pytest

from tpubench.core import errors
from tpubench.core.basis import Basis
from tpubench.core.config import AdviseConfig
from tpubench.report import advise

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
EPOCH = 1_281_167
NOW = dt.datetime(2026, 11, 22, tzinfo=dt.timezone.utc)
T4 = "resnet50 · gcp:tpu-v5e-4 · accelerator=tpu · replicas=4"
T8 = "resnet50 · gcp:tpu-v5e-8 · accelerator=tpu · replicas=8"


@pytest.fixture(autouse=True)
def _wide(monkeypatch):
    """The tables at full width, one row a line (the 100-column rule: test_console_width.py)."""
    monkeypatch.setenv("COLUMNS", "200")


def _advice(**kw) -> str:
    cfg = AdviseConfig(
        inputs=(str(FIXTURES / "gpus"), str(FIXTURES / "tpus")),
        model="resnet50",
        tf_version="2.21.0",
        price_catalog=str(FIXTURES / "prices" / "advise.csv"),
        **kw,
    )
    return advise.advise(cfg, now=NOW)


def _line(text: str, prefix: str) -> str:
    return next(x.strip() for x in text.splitlines() if x.strip().startswith(prefix))


def test_cheapest_within_deadline_with_runner_up_on_demand_and_spot():
    text = _advice(deadline_seconds=3600)
    t4_od = EPOCH / 1550 / 3600 * 4 * 1.20  # $1.10, 13.8 min
    t8_od = EPOCH / 3000 / 3600 * 8 * 1.20  # $1.14, 7.1 min
    assert _line(text, "on-demand:") == (
        f"on-demand: {T4}: {EPOCH / 1550 / 60:.1f} min for ${t4_od:.2f} (cheapest of 4 that "
        f"finish within 60.0 min); runner-up {T8}: {EPOCH / 3000 / 60:.1f} min for "
        f"${t8_od:.2f} (+{t8_od / t4_od - 1:.0%} cost)"
    )
    # One basis per answer: on demand by default, the other named but not answered.
    assert "Advice, on on-demand prices (--pricing=on_demand):" in text
    assert not any(x.strip().startswith("spot:") for x in text.splitlines())
    assert "(other basis: spot prices (--pricing=spot))" in text
    t4_spot, t8_spot = EPOCH / 1550 / 3600 * 4 * 0.213, EPOCH / 3000 / 3600 * 8 * 0.213
    text = _advice(deadline_seconds=3600, pricing=Basis.SPOT)
    assert "Advice, on spot prices (--pricing=spot):" in text
    assert not any(x.strip().startswith("on-demand:") for x in text.splitlines())
    spot = _line(text, "spot:")
    assert spot.startswith(f"spot: {T4}: 13.8 min for ${t4_spot:.3f} (cheapest of 2 ")
    assert f"runner-up {T8}: 7.1 min for ${t8_spot:.3f}" in spot
    # the GPU rows show on-demand cost and no spot price (the n1 host has none)
    g2 = _line(text, "│ resnet50 · accelerator=gpu · replicas=2 ")
    assert f"${EPOCH / 390 / 3600 * (0.379998 + 2 * 2.48):.2f}" in g2 and "yes / n/a" in g2


def test_tight_deadlines():
    only = _line(_advice(deadline_seconds=600), "on-demand:")
    assert only.startswith(f"on-demand: {T8}: 7.1 min") and "runner-up" not in only
    # 427 s at the median, 1,281,167 / 2,900 = 442 s at the slow end of the interval
    slow = _line(_advice(deadline_seconds=430), "on-demand:")
    assert slow.endswith(
        f"at the slow end of its interval it takes {EPOCH / 2900 / 60:.1f} min, past the deadline"
    )
    none = _line(_advice(deadline_seconds=420), "on-demand:")
    assert none == (
        f"on-demand: no configuration can finish within 7.0 min; the closest is {T8}: "
        f"{EPOCH / 3000 / 60:.1f} min for ${EPOCH / 3000 / 3600 * 9.6:.2f}"
    )


def test_fastest_within_budget():
    text = _advice(budget_usd=1.12)
    assert _line(text, "on-demand:").startswith(
        f"on-demand: {T4}: 13.8 min for $1.10 (fastest of 1 "
    )
    spot = _line(_advice(budget_usd=1.12, pricing=Basis.SPOT), "spot:")
    assert spot.startswith(f"spot: {T8}: 7.1 min for $0.202 (fastest of 2 that cost at most $1.12)")
    assert spot.endswith(f"(+{3000 / 1550 - 1:.0%} time)")


def test_to_target_uses_recorded_time_to_accuracy():
    text = _advice(deadline_seconds=1800, to_target=True)
    # medians: 1 GPU 3600 s, 2 GPUs 1900 s, 4 GPUs 1050 s (2 of 3 reached), v5e-4 500 s, v5e-8 260 s
    assert _line(text, "on-demand:").startswith(
        f"on-demand: {T4}: {500 / 60:.1f} min for ${500 / 3600 * 4.8:.3f} (cheapest of 3 "
    )
    assert f"runner-up {T8}: {260 / 60:.1f} min for ${260 / 3600 * 9.6:.3f}" in text


def test_warnings_old_other_tf_input_bound():
    text = _advice(deadline_seconds=3600)
    warnings = text.split("Warnings:")[1]
    assert "9 of 15 records are older than 180 days (newest of them 2026-03-01)" in warnings
    assert "records come from TensorFlow 2.20.0, 2.21.0; this installation has 2.21.0" in warnings
    assert "input-bound (--compare_synthetic): resnet50 · gcp:n1-standard-8+4xgcp:v100" in warnings
    assert "6 of 15 records on real data have no input-bound check" in warnings


def test_bad_requests():
    with pytest.raises(errors.UsageError, match="no ok runs of model 'vgg16'.*: resnet50"):
        advise.advise(
            AdviseConfig(inputs=(str(FIXTURES / "gpus"),), model="vgg16", deadline_seconds=60)
        )
    with pytest.raises(errors.UsageError, match="exactly one of --deadline"):
        advise.advise(
            AdviseConfig(
                inputs=(str(FIXTURES / "gpus"),),
                model="resnet50",
                budget_usd=1,
                deadline_seconds=60,
            )
        )


def test_advice_refuses_mixing_networks_but_weighs_batch_and_precision():
    mixed = FIXTURES / "mixed"
    with pytest.raises(errors.UsageError, match=r"differ in model parameters .*agree$"):
        advise.advise(AdviseConfig(inputs=(str(mixed),), model="mnist_mlp", budget_usd=1))
    files = tuple(str(mixed / f"mlp-{n}.json") for n in ("b128", "b256", "bf16"))
    text = advise.advise(AdviseConfig(inputs=files, model="mnist_mlp", deadline_seconds=60))
    assert "batch=256" in text and "precision=bf16" in text
    assert "mnist_mlp runs differ in batch size (128 in 2 runs, 256 in 1 run); compared" in text
