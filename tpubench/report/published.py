"""Figures the studies behind tpubench published, to sit beside measured runs.

They are labelled "published" everywhere they appear (their own table, CSV
rows with kind=published, dashed lines and a "published:" prefix in plots)
and never enter a measured group, a median, a baseline or `advise`: they
were taken on other hardware, software and data, years ago.  Only figures
the studies printed as numbers are here; findings given as charts or prose
(the CPU-vs-GPU study's relative times, the Alibaba studies) are not
re-read from pictures, and RiseML's CNN results, printed as speedups only
(8.4x a P100), are not rates.
"""

from __future__ import annotations

import dataclasses

from tpubench.core import errors


@dataclasses.dataclass(frozen=True)
class Figure:
    """One published throughput figure."""

    set: str  # the name --published selects
    source: str
    model: str  # as the study names it
    hardware: str
    devices: int
    batch_per_device: int
    data: str  # synthetic or real
    examples_per_sec: float
    note: str = ""
    # GPUs or TPU chips in one device as the study counted devices (RiseML's "one Cloud
    # TPU" was a v2-8: 4 chips), so a figure compares per chip with other hardware.
    chips_per_device: int = 1

    @property
    def chips(self) -> int:
        return self.devices * self.chips_per_device

    @property
    def examples_per_sec_per_chip(self) -> float:
        return self.examples_per_sec / self.chips


_TF = "TensorFlow benchmarks 2017 (tf_cnn_benchmarks)"
_RISE = "RiseML Cloud TPU vs GPU 2018"
_MODELS = ("InceptionV3", "ResNet-50", "ResNet-152", "AlexNet", "VGG16")
# DGX-1 (P100): (synthetic, real) per model, per GPU count; None = not published.
_DGX1 = {
    1: ((142, 142), (219, 218), (91.8, 91.4), (2987, 2890), (154, 154)),
    2: ((284, 278), (422, 425), (181, 179), (5658, 4448), (295, 284)),
    4: ((569, 551), (852, 853), (356, 359), (10509, 7105), (584, 534)),
    8: ((1131, 1079), (1734, 1630), (716, 708), (17822, None), (1081, 898)),
}
_K80 = {1: (30.5, 51.9, 20.0, 656, 35.4), 8: (227, 387, 148, 4640, 234)}
_K80_BATCH = (64, 64, 32, 64, 32)
_AWS = {1: 52.4, 8: 378, 16: 751, 32: 1388, 64: 2744}


def _figures() -> list[Figure]:
    out = []
    for gpus, row in _DGX1.items():
        for model, (synthetic, real) in zip(_MODELS, row, strict=True):
            batch = 512 if model == "AlexNet" else 64
            for data, value in (("synthetic", synthetic), ("real", real)):
                if value is not None:
                    out.append(
                        Figure("tf-dgx1", _TF, model, "DGX-1 P100", gpus, batch, data, value)
                    )
    for gpus, row in _K80.items():
        for model, value, batch in zip(_MODELS, row, _K80_BATCH, strict=True):
            out.append(Figure("tf-k80", _TF, model, "GCE K80", gpus, batch, "synthetic", value))
    for gpus, value in _AWS.items():
        out.append(
            Figure(
                "tf-k80-distributed",
                _TF,
                "ResNet-50",
                "AWS K80, distributed_replicated",
                gpus,
                64,
                "synthetic",
                value,
            )
        )
    lstm = "bidirectional LSTM text classifier (1024 hidden)"
    for hardware, value, batch, note, chips in (
        ("Cloud TPU (4 TPUv2 chips)", 21402, 1024, "did not converge in the study", 4),
        ("P100", 1658, 128, "", 1),
        ("V100", 2778, 128, "", 1),
    ):
        out.append(
            Figure("riseml", _RISE, lstm, hardware, 1, batch, "synthetic", value, note, chips)
        )
    return out


FIGURES: tuple[Figure, ...] = tuple(_figures())
SETS = tuple(dict.fromkeys(f.set for f in FIGURES))


def select(names: tuple[str, ...] | list[str]) -> list[Figure]:
    """The figures of the named sets ('all' for every set), series by series."""
    wanted = set()
    for name in names:
        if name == "all":
            wanted.update(SETS)
        elif name in SETS:
            wanted.add(name)
        else:
            raise errors.unknown("--published set", name, (*SETS, "all"))
    chosen = [f for f in FIGURES if f.set in wanted]
    order = {
        key: i
        for i, key in enumerate(dict.fromkeys((f.set, f.hardware, f.model, f.data) for f in chosen))
    }
    # One study, machine, model and data kind together, by device count.
    return sorted(chosen, key=lambda f: (order[(f.set, f.hardware, f.model, f.data)], f.devices))


@dataclasses.dataclass(frozen=True)
class Scaling:
    """A published scaling series: one study, hardware, model and data kind."""

    name: str
    counts: tuple[int, ...]
    rates: tuple[float, ...]

    @property
    def efficiency(self) -> tuple[float, ...]:
        c0, r0 = self.counts[0], self.rates[0]
        return tuple(
            100.0 * r / (r0 * c / c0) for c, r in zip(self.counts, self.rates, strict=True)
        )


def scaling(figures: list[Figure]) -> list[Scaling]:
    """Series with two or more device counts, e.g. DGX-1 ResNet-50 synthetic 1-8 GPUs."""
    series: dict[tuple, list[Figure]] = {}
    for f in figures:
        series.setdefault((f.set, f.hardware, f.model, f.data), []).append(f)
    out = []
    for (_, hardware, model, data), members in series.items():
        if len(members) < 2:
            continue
        members.sort(key=lambda f: f.devices)
        out.append(
            Scaling(
                f"published: {model}, {hardware}, {data}",
                tuple(f.devices for f in members),
                tuple(f.examples_per_sec for f in members),
            )
        )
    return out
