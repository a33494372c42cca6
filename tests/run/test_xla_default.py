"""An unset --xla: on for bf16 training on a GPU, as given elsewhere (run/train/planning.py)."""

from __future__ import annotations

import types

import pytest

from tpubench.core.config import TrainConfig
from tpubench.core.precision import Precision
from tpubench.run.train import planning


def _placement(accelerator="gpu", replicas=1, strategy="one_device"):
    return types.SimpleNamespace(accelerator=accelerator, num_replicas=replicas, strategy=strategy)


@pytest.mark.parametrize(
    "precision, accelerator, expected",
    [("bf16", "gpu", True), ("fp16", "gpu", False), ("fp32", "gpu", False), ("bf16", "cpu", False)],
)
def test_unset_xla_is_on_for_bf16_on_a_gpu_only(precision, accelerator, expected):
    xla, reason = planning.resolve_xla(
        TrainConfig(precision=Precision(precision)), _placement(accelerator), synced=False
    )
    assert xla is expected
    assert (reason is not None) is expected
    if expected:
        assert "--noxla" in reason and "bf16" in reason


@pytest.mark.parametrize("given", [True, False])
def test_xla_or_noxla_on_the_command_line_wins(given):
    cfg = TrainConfig(precision=Precision.BF16, xla=given, xla_given=True)
    assert planning.resolve_xla(cfg, _placement("gpu"), synced=False) == (given, None)
    cfg = TrainConfig(precision=Precision.FP32, xla=given, xla_given=True)
    assert planning.resolve_xla(cfg, _placement("cpu"), synced=False) == (given, None)


def test_no_default_xla_where_xla_cannot_compile_the_step():
    cfg = TrainConfig(precision=Precision.BF16)
    assert planning.resolve_xla(cfg, _placement(replicas=2), synced=True) == (False, None)
    assert planning.resolve_xla(cfg, _placement(replicas=1), synced=True)[0] is True
    ps = _placement(strategy="parameter_server")
    assert planning.resolve_xla(cfg, ps, synced=False) == (False, None)
