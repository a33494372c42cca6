"""Each seed's own numbers as rows on the cells of its study: what study/report/seeds.py checks
the study's findings against.

Only study/report/seeds.py reads these, to build a Results for that self-check;
measured.collect reads run records alone, so no row enters a measured mean.
How each seed published its numbers, and so what its rows are:

- cnn_scaling: tf_cnn_benchmarks' DGX-1 (P100) and GCE K80 tables, images/s
  (report/published.py), each on the study's setup for its model and GPU
  count (the K80 ran every model with parameter servers on the CPU, and
  ResNet-152 and VGG16 at 32 a GPU);
- tpu_vs_gpu: RiseML printed the CNNs as speedups, so a CNN's GPU row is 1
  and the Cloud TPU's its speedup; the BiLSTM's are examples/s
  (report/published.py).  The TPU at its quoted $6.50/h; the GPUs at 2018
  prices (GPU only): a P100 $1.46/h (GCP after its late-2017 cut), a V100
  $3.06/h (AWS p3.2xlarge); one variant per GPU;
- cpu_vs_gpu: the seed's per-epoch logs (github.com/minimaxir/
  deep-learning-cpu-gpu-benchmark, logs/), summed per model and machine as
  its notebook does: epochs per hour, priced as the notebook prices them
  (the K80 with its host $0.745/h on demand; 8 vCPUs $0.060/h preemptible
  plus the 6.07% Skylake premium, doubling with the vCPUs); one variant per
  TensorFlow build (pip, compiled);
- strategies, gpu_host_sizing: Alibaba's articles give these as sentences
  (and charts); no figures of theirs were found to encode.  Their rows are
  FROM THE TEXT: they say what a sentence says and nothing more (an order:
  the method named fastest 2, the others 1; a size: 1 from the size the
  text names up, 0.5 below it, a placeholder for "slower"; "about 15%":
  0.85).
"""

from __future__ import annotations

import dataclasses

from tpubench.core.basis import Basis
from tpubench.report import published as published_lib
from tpubench.study.spec import published

FROM_THE_TEXT = "from the text"
WINS, REST = 2.0, 1.0  # an order from the text: the one it names fastest, the others
ENOUGH, SHORT = 1.0, 0.5  # a size from the text: at or above it, below it (placeholders)


@dataclasses.dataclass(frozen=True)
class Row:
    """One seed figure on the study cell it stands for (part, model, data kind, setup label)."""

    part: str
    model: str
    data: str
    setup: str
    rate: float  # in the variant's unit; only ratios of one model's rows are read
    usd_hour: float | None = None
    pricing: Basis = Basis.ON_DEMAND
    machine: str = ""  # the seed's hardware, where a finding names it ("" : the variant's)


@dataclasses.dataclass(frozen=True)
class Variant:
    """One set of a seed's rows: a table, or one GPU or build of its comparison."""

    name: str
    source: str  # where the figures are, or FROM_THE_TEXT
    unit: str
    rows: tuple[Row, ...]


# -- cnn_scaling: the DGX-1 and K80 tables ------------------------------------

_OURS = {theirs: ours for ours, theirs in published.NAMES.items()}
_DATA = {"synthetic": "synthetic", "real": "jpeg"}  # the seed's ImageNet; here JPEG photos


def _tf_label(model: str, devices: int) -> str:
    """The cnn_scaling setup the seed's configuration stands on: parameter servers on the
    CPU for InceptionV3 and the ResNets (at 1 GPU too), replicated NCCL for AlexNet and
    VGG16 (at 1 GPU: the one device)."""
    replicated = model in ("alexnet", "vgg16")
    if devices == 1:
        return "1 GPU replicated" if replicated else "1 GPU"
    return f"{devices} GPU" + (" nccl" if replicated else "")


def tf_tables(set_name: str) -> tuple[Row, ...]:
    return tuple(
        Row(
            "train",
            _OURS[f.model],
            _DATA[f.data],
            _tf_label(_OURS[f.model], f.devices),
            f.examples_per_sec,
        )
        for f in published_lib.select([set_name])
    )


# -- tpu_vs_gpu: RiseML's speedups and BiLSTM rates --------------------------

_TPU_USD, _GPU_USD = 6.50, {"V100": 3.06, "P100": 1.46}
_SPEEDUP = {
    "V100": {"resnet50": 5.1, "inception_v3": 4.8},
    "P100": {"resnet50": 8.4, "inception_v3": 8.4},
}


def riseml(gpu: str) -> tuple[Row, ...]:
    lstm = {f.hardware.split(" ")[0]: f.examples_per_sec for f in published_lib.select(["riseml"])}
    rates = {
        **{m: (1.0, x) for m, x in _SPEEDUP[gpu].items()},
        "bilstm1024": (lstm[gpu], lstm["Cloud"]),
    }
    out = []
    for model, (on_gpu, on_tpu) in rates.items():
        out.append(Row("train", model, "synthetic", "1 GPU", on_gpu, _GPU_USD[gpu], machine=gpu))
        tpu = Row("train", model, "synthetic", "Cloud TPU", on_tpu, _TPU_USD, machine="v2-8")
        out.append(tpu)
    return tuple(out)


# -- cpu_vs_gpu: the seed's logs, summed -------------------------------------

_GPU_HOUR = 0.745  # a K80 with its n1-standard-1 host, on demand
_CPU8_HOUR = 0.060 * (1 + 0.0607)  # n1-highcpu-8 preemptible with the Skylake premium
# model -> (epochs, GPU seconds, pip 8/16/32/64 vCPUs, compiled 8/16/32/64), summed from the logs
_LOGS = {
    "mnist_mlp": (20, 65.1, (138.5, 95.2, 91.4, 91.8), (87.8, 70.0, 97.3, 85.3)),
    "mnist_cnn": (12, 172.7, (1116.2, 616.0, 408.2, 497.4), (634.1, 426.5, 397.6, 504.9)),
    "cifar10_cnn": (20, 763.2, (3151.5, 1971.3, 1373.5, 1449.1), (2088.4, 1357.6, 1163.6, 1279.4)),
    "imdb_fasttext": (5, 331.5, (1756.3, 1043.3, 1021.3, 1269.1), (1325.2, 1035.6, 1130.5, 1219.2)),
    "imdb_bilstm": (4, 1229.4, (627.1, 560.5, 509.7, 545.1), (577.3, 516.3, 549.2, 565.8)),
    "lstm_textgen": (10, 957.4, (1877.9, 1776.2, 1273.0, 1421.1), (1325.5, 1245.2, 1414.4, 1346.5)),
}


def woolf(build: str) -> tuple[Row, ...]:
    out = []
    for model, (epochs, gpu, pip, compiled) in _LOGS.items():
        out.append(Row("train", model, "synthetic", "1 GPU", epochs * 3600 / gpu, _GPU_HOUR))
        for i, total in enumerate(pip if build == "pip" else compiled):
            usd = _CPU8_HOUR * 2**i
            label = f"{8 * 2**i} vCPU"
            out.append(
                Row("train", model, "synthetic", label, epochs * 3600 / total, usd, Basis.SPOT)
            )
    return tuple(out)


# -- strategies and gpu_host_sizing: from the text ---------------------------

_SMALL, _BIG = ("inception_v3", "resnet50", "resnet152"), ("alexnet", "vgg16")
_METHODS = ("nccl", "hierarchical_copy", "reduce_to_cpu", "ps_cpu", "ps_gpu")


def strategies() -> tuple[Row, ...]:
    """Who wins, as the text says: CPU aggregation for the small nets; for the big nets
    NCCL at 8 GPUs and CPU aggregation at 2-4 (the text's "NCCL loses at 2-4 GPUs")."""
    out = []
    for model in _SMALL + _BIG:
        for n in (2, 4, 8):
            wins = "nccl" if model in _BIG and n == 8 else "reduce_to_cpu"
            for how in _METHODS:
                rate = WINS if how == wins else REST
                out.append(Row("train", model, "synthetic", f"{n} GPU {how}", rate))
    return tuple(out)


def sizing() -> tuple[Row, ...]:
    """About 4 vCPUs to train, 2 to infer, 2 vCPUs and 1 GB for the PTB LSTM; the slow
    disk costs inference about 15%, training about 1%; local NVMe preprocesses 25% faster
    than an SSD cloud disk (the seed's local disk stands on this study's control setups)."""
    size = lambda n, enough: ENOUGH if n >= enough else SHORT  # noqa: E731
    out = [
        Row("train", model, "jpeg", f"{n} vCPU", size(n, 4))
        for model in ("resnet50", "alexnet", "googlenet", "vgg16", "inception_v3")
        for n in (1, 2, 4, 8, 16)
    ]
    out += [Row("infer", "resnet50", "jpeg", f"{n} vCPU", size(n, 2)) for n in (1, 2, 4, 8)]
    out += [
        Row("disk_classes", "resnet50", "jpeg", "local disk + emulator", 1.0),
        Row("disk_classes", "resnet50", "jpeg", "standard cloud disk", 0.85),
        Row("disk_classes_train", "resnet50", "jpeg", "local disk + emulator (train)", 1.0),
        Row("disk_classes_train", "resnet50", "jpeg", "standard cloud disk (train)", 0.99),
        Row("preprocess", "resnet50", "jpeg", "local disk + emulator (preprocess)", 1.25),
        Row("preprocess", "resnet50", "jpeg", "SSD cloud disk (preprocess)", 1.0),
    ]
    caps = {"512 MiB": 0.5, "1 GiB": 1, "2 GiB": 2, "4 GiB": 4}
    out += [
        Row("lstm", "ptb_lstm", "real", f"{n} vCPU {cap}", min(size(n, 2), size(gib, 1)))
        for n in (1, 2, 4)
        for cap, gib in caps.items()
    ]
    return tuple(out)
