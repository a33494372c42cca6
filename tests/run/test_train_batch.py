"""The training plan carries its batch typed: one Batch, built and checked once."""

from __future__ import annotations

import dataclasses

import pytest

from tpubench.core import errors
from tpubench.core.config import TrainConfig
from tpubench.run.train import planning


@pytest.mark.parametrize(
    "given, replicas, size, per_replica",
    [
        ({"global_batch_size": 64}, 4, 64, 16),
        ({"per_replica_batch_size": 32}, 4, 128, 32),
        ({}, 2, 2 * 50, 50),  # the model's default per replica, on each replica
    ],
)
def test_a_batch_is_built_once_from_the_flags_and_says_how_it_splits(
    given, replicas, size, per_replica
):
    cfg = TrainConfig(**({"global_batch_size": None, "per_replica_batch_size": None} | given))
    batch = planning.Batch.of(cfg, 50, replicas)
    assert (batch.global_size, batch.per_replica, batch.replicas) == (size, per_replica, replicas)
    with pytest.raises(dataclasses.FrozenInstanceError):
        batch.global_size = 1


def test_a_batch_that_does_not_split_evenly_is_one_line_naming_it_and_a_fit():
    cfg = TrainConfig(global_batch_size=10, per_replica_batch_size=None)
    with pytest.raises(errors.UsageError) as e:
        planning.Batch.of(cfg, 50, 4)
    assert str(e.value) == (
        "--batch_size=10 is not divisible by the 4 replicas; accepted: a multiple of 4 (e.g. 8)"
    )


def test_a_per_replica_batch_past_the_global_cap_is_refused_before_any_split():
    cfg = TrainConfig(global_batch_size=None, per_replica_batch_size=10**9)
    with pytest.raises(errors.UsageError, match=r"^--per_replica_batch_size=1,000,000,000 on 2"):
        planning.Batch.of(cfg, 50, 2)


def test_the_plan_reads_its_replicas_and_the_record_its_sizes_from_the_batch():
    fields = [f.name for f in dataclasses.fields(planning.Plan)]
    assert "batch" in fields
    batch = planning.Batch(96, 3)
    plan = planning.Plan(*[None] * fields.index("batch"), batch, *[None] * 3)
    assert plan.replicas == 3 and plan.batch.per_replica == 32
