"""A rerun's self-check: each study's findings, fed their seed's own numbers, hold.

A finding restates what its seed claimed.  Fed the seed's own numbers (a
perfect rerun of the seed's experiment, study/spec/seed_rows.py), it must read
`holds`: `results(study, variant)` builds a Results from one set of a seed's
rows and findings.check_all judges it like measured cells (tests/study/
test_seed_findings.py expects every claim below to hold on its variants).
These Results are built for that check alone: measured.collect reads run
records only, so no seed figure enters a measured mean, a table or a verdict
on your cells; a report prints a claim's `seed` text beside the measured
figure, and that is all.  A finding that is not the seed's (tpubench's own
question, or one no cell can measure) is listed with why in `others`.
"""

from __future__ import annotations

import dataclasses

from tpubench.study.run import cells as cells_lib
from tpubench.study.run import measured
from tpubench.study.spec import seed_rows as R
from tpubench.study.spec.seed_rows import FROM_THE_TEXT, Row, Variant


@dataclasses.dataclass(frozen=True)
class Claim:
    """A finding (its study-file text) and the variants whose rows it must hold on."""

    text: str
    variants: tuple[str, ...]
    seed: str  # what the seed saw, printed beside the measured figure


@dataclasses.dataclass(frozen=True)
class Seed:
    source: str
    variants: tuple[Variant, ...]
    claims: tuple[Claim, ...]
    others: dict  # finding text -> why it is not checked on the seed's rows


# -- the seeds, their claims (the study files' finding texts) ----------------

_TF_SOURCE = "tf_cnn_benchmarks' tables (report/published.py)"
_WOOLF = "the seed's logs (minimaxir/deep-learning-cpu-gpu-benchmark), summed per model"
_ALIBABA = f"Alibaba Cloud (2017), {FROM_THE_TEXT}"

SEEDS = {
    "cnn_scaling": Seed(
        "TensorFlow benchmarks 2017 (tf_cnn_benchmarks)",
        (
            Variant("DGX-1 P100", _TF_SOURCE, "images/s", R.tf_tables("tf-dgx1")),
            Variant("GCE K80", _TF_SOURCE, "images/s", R.tf_tables("tf-k80")),
        ),
        (
            Claim(
                "InceptionV3 and the ResNets, with parameter servers on the CPU, scale to at "
                "least 90% of ideal from 1 to 8 GPUs on synthetic data",
                ("DGX-1 P100", "GCE K80"),
                "DGX-1 P100 at 8 GPUs 100% (InceptionV3), 99% (ResNet-50), 97% (ResNet-152); "
                "GCE K80 93%, 93%, 92%",
            ),
            Claim(
                "real data keeps up with synthetic for InceptionV3 and the ResNets at 1-8 GPUs "
                "(within 7%)",
                ("DGX-1 P100",),
                "DGX-1 P100 real/synthetic 0.94x-1.01x (the lowest, ResNet-50 at 8 GPUs)",
            ),
            Claim(
                "AlexNet's real data saturates the input pipeline: at 4 and 8 GPUs it trains at "
                "most 0.8x as fast as on synthetic data",
                ("DGX-1 P100",),
                "DGX-1 P100 0.68x at 4 GPUs (7,105 vs 10,509 images/s); at 8 GPUs left out "
                '"due to it maxing out the input pipeline"',
            ),
        ),
        {},
    ),
    "tpu_vs_gpu": Seed(
        "RiseML Cloud TPU vs GPU (2018)",
        tuple(
            Variant(
                gpu,
                "RiseML's speedups and BiLSTM rates (report/published.py); 2018 prices",
                "the GPU's rate = 1 (CNNs), examples/s (BiLSTM)",
                R.riseml(gpu),
            )
            for gpu in ("V100", "P100")
        ),
        (
            Claim(
                "ResNet-50 trains at least 4x as fast on one Cloud TPU as on one GPU",
                ("V100", "P100"),
                "5.1x a V100, 8.4x a P100, on one Cloud TPU = a v2-8 (4 chips)",
            ),
            Claim(
                "InceptionV3 trains at least 4x as fast on one Cloud TPU as on one GPU",
                ("V100", "P100"),
                "4.8x a V100, 8.4x a P100, on one Cloud TPU = a v2-8 (4 chips)",
            ),
            Claim(
                "the 1024-unit BiLSTM trains at least 7x as fast on one Cloud TPU as on one GPU",
                ("V100", "P100"),
                "21,402 examples/s on a v2-8 vs 2,778 on a V100 (7.7x), 1,658 on a P100 (12.9x)",
            ),
            Claim(
                "one Cloud TPU trains for at least 10% less per epoch than one GPU (the best "
                "price-performance)",
                ("V100", "P100"),
                "at $6.50/h a v2-8's $/epoch was 0.28x-0.44x a V100's ($3.06/h), 0.34x-0.53x "
                "a P100's ($1.46/h), from its speedups",
            ),
        ),
        {},
    ),
    "cpu_vs_gpu": Seed(
        "Max Woolf, Benchmarking TensorFlow on Cloud CPUs (2017)",
        tuple(
            Variant(f"{build} TensorFlow", _WOOLF, "epochs/hour", R.woolf(build))
            for build in ("pip", "compiled")
        ),
        (
            Claim(
                "64 vCPUs train no faster than 32: about as fast, or slower",
                ("pip TensorFlow", "compiled TensorFlow"),
                "32 vCPUs at 1.00x-1.24x the rate of 64 (pip), 0.88x-1.27x (compiled)",
            ),
            Claim(
                "16 vCPUs are the fastest of the 8-64 vCPU machines for most models, at half "
                "the price of 32: the best balance of speed and cost",
                ("compiled TensorFlow",),
                "with compiled TensorFlow 16 vCPUs fastest for 4 of 6 models (32 vCPUs for "
                "mnist_cnn, cifar10_cnn)",
            ),
            Claim(
                "the fewest vCPUs tried, 8, train most cheaply: below the GPU and every larger "
                "machine",
                ("pip TensorFlow", "compiled TensorFlow"),
                "8 vCPUs cheapest for all 6 models on both builds, 0.04x-0.55x the GPU's $/epoch",
            ),
            Claim(
                "the GPU trains the bidirectional LSTM at most 0.6x as fast as any CPU machine",
                ("pip TensorFlow", "compiled TensorFlow"),
                '"twice as slow as any CPU configuration": 0.51x the slowest (pip), 0.47x '
                "(compiled)",
            ),
        ),
        {
            "in 2026, 8 vCPUs of an AMX CPU in bf16 train these models more cheaply than one "
            "GPU or the study's 16 vCPUs": "the seed's question asked of 2026 CPUs: not in it",
            "in 2026, 8 vCPUs of an AMD EPYC CPU in bf16 (AVX-512 BF16, no AMX) train these "
            "models more cheaply than one GPU or the study's 16 vCPUs": "the seed's question "
            "asked of 2026 CPUs: not in it",
            "TensorFlow compiled for AVX/FMA trains 30-40% faster than the pip build on 8 and "
            "16 vCPUs": "unmeasurable here: the study runs one TensorFlow build",
        },
    ),
    "strategies": Seed(
        "Alibaba Cloud, 8x P100 strategy comparison (2017)",
        (Variant(FROM_THE_TEXT, _ALIBABA, "an order: 2 the fastest, 1 the rest", R.strategies()),),
        (
            Claim(
                "small-parameter nets (InceptionV3, ResNet-50/152) scale best with CPU aggregation",
                (FROM_THE_TEXT,),
                f"{FROM_THE_TEXT}: CPU aggregation fastest at 8 GPUs",
            ),
            Claim(
                "big nets (AlexNet, VGG16) want replicated NCCL or CPU aggregation",
                (FROM_THE_TEXT,),
                f"{FROM_THE_TEXT}: NCCL at 8 GPUs, CPU aggregation at 2-4",
            ),
            Claim(
                "for the big nets (AlexNet, VGG16), NCCL wins at 8 GPUs",
                (FROM_THE_TEXT,),
                f"{FROM_THE_TEXT}: NCCL fastest at 8 GPUs",
            ),
            Claim(
                "NCCL loses at 2-4 GPUs, to CPU aggregation",
                (FROM_THE_TEXT,),
                f"{FROM_THE_TEXT}: CPU aggregation fastest at 2 and 4 GPUs",
            ),
        ),
        {},
    ),
    "gpu_host_sizing": Seed(
        "Alibaba Cloud, GPU instance sizing (2017)",
        (Variant(FROM_THE_TEXT, _ALIBABA, "1 = enough, 0.5 = short (placeholders)", R.sizing()),),
        (
            Claim(
                "one GPU needs about 4 vCPUs to train image models",
                (FROM_THE_TEXT,),
                f"{FROM_THE_TEXT}: about 4 vCPUs",
            ),
            Claim(
                "inference needs about 2 vCPUs", (FROM_THE_TEXT,), f"{FROM_THE_TEXT}: about 2 vCPUs"
            ),
            Claim(
                "inference loses about 15% when the data is on the slow disk (a standard cloud "
                "disk, emulated)",
                (FROM_THE_TEXT,),
                f"{FROM_THE_TEXT}: about 15% slower on a standard cloud disk",
            ),
            Claim(
                "training is insensitive to the disk (about 1% between disk types; a standard "
                "cloud disk, emulated)",
                (FROM_THE_TEXT,),
                f"{FROM_THE_TEXT}: about 1% between disk types",
            ),
            Claim(
                "preprocessing is I/O bound (local NVMe 25% faster than an SSD cloud disk)",
                (FROM_THE_TEXT,),
                f"{FROM_THE_TEXT}: local NVMe 25% faster",
            ),
            Claim(
                "PTB LSTM training needs about 2 vCPUs and 1 GB of memory",
                (FROM_THE_TEXT,),
                f"{FROM_THE_TEXT}: about 2 vCPUs and 1 GB",
            ),
        ),
        {
            "inference loses about 15% when the data is on the slow disk (here gs://)": (
                "the seed read no object store: its slow-disk claim, asked of gs://"
            ),
            "training is insensitive to the disk (here gs://)": (
                "the seed read no object store: its slow-disk claim, asked of gs://"
            ),
        },
    ),
}


def quote(study: str, finding: str) -> str:
    """What FINDING's seed saw, to print beside the measured figure ('' if not a seed claim)."""
    seed = SEEDS.get(study)
    claim = next((c for c in seed.claims if c.text == finding), None) if seed else None
    return claim.seed if claim else ""


# A host with every device a seed row may stand on, so that no row is "not runnable".
_HOST = cells_lib.Host(cores=tuple(range(64)), gpus=8, gpu_name="the seed's", tpu=True)


def _measured(cell, row: Row, trials: int, machine: str) -> measured.Measured:
    """ROW as a cell measured TRIALS times: a seed printed one figure, so its interval is
    the figure itself (the check asks what the figure says, not how noisy it was)."""
    sec = 3600 / row.rate  # the time of 3600 units of the variant's work: ratios are read
    usd = row.usd_hour * sec / 3600 if row.usd_hour else None
    return measured.Measured(
        cell=cell,
        trials=trials,
        rate=row.rate,
        usd_hour=row.usd_hour,
        usd_epoch=usd,
        sec_epoch=sec,
        usd_million=None,
        accelerator=cell.device(_HOST),
        machine=machine,
        pricing=row.pricing,
        batch=None,
        paths=(),
        rate_ci=(row.rate, row.rate),
        usd_epoch_ci=(usd, usd) if usd else None,
    )


def placed(study, variant: Variant) -> dict:
    """{cell id: Row} for the rows of VARIANT that land on a full-scale cell of STUDY."""
    rows = {(r.part, r.model, r.data, r.setup): r for r in variant.rows}
    return {
        c.id: rows[key]
        for c in cells_lib.expand(study, "full")
        if (key := (c.part.name, c.model.model, c.data, c.setup.label)) in rows
    }


def results(study, variant: Variant) -> measured.Results:
    """The seed's rows of VARIANT as a Results of STUDY, with the study's repeats per cell."""
    all_cells = cells_lib.expand(study, "full")
    rows = placed(study, variant)
    got = {
        c.id: _measured(c, rows[c.id], study.repeats, rows[c.id].machine or variant.name)
        for c in all_cells
        if c.id in rows
    }
    return measured.Results(
        study,
        "full",
        _HOST,
        f"the seed's rows ({variant.source})",
        tuple(all_cells),
        got,
        {},
        where="in the seed's rows",
        repeats=study.repeats,
    )
