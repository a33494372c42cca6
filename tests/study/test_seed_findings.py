"""Each study agrees with its seed on the seed's own numbers (study/report/seeds.py): fed the
rows a perfect rerun of the seed's experiment would give, every seed finding holds."""

from __future__ import annotations

import pytest

from tpubench.core.basis import Basis
from tpubench.report import published as published_lib
from tpubench.study.report import bands, findings, forms, report, seeds
from tpubench.study.run import cells, measured
from tpubench.study.spec import seed_rows, spec

CASES = [(name, v.name) for name, seed in seeds.SEEDS.items() for v in seed.variants]


def _load(name_or_path):
    return spec.load(str(name_or_path), forms.FORMS, findings.CHECKS)


def _verdicts(study, variant_name: str) -> dict:
    variant = next(v for v in seeds.SEEDS[study.name].variants if v.name == variant_name)
    return {v.finding: v for v in findings.check_all(seeds.results(study, variant))}


def test_every_shipped_study_has_its_seed_s_rows():
    assert sorted(seeds.SEEDS) == sorted(spec.shipped())


@pytest.mark.parametrize("name", spec.shipped())
def test_every_finding_is_a_seed_claim_or_says_why_it_is_not(name):
    study, seed = _load(name), seeds.SEEDS[name]
    claims = [c.text for c in seed.claims]
    assert sorted(claims + list(seed.others)) == sorted(f.text for f in study.findings)
    names = {v.name for v in seed.variants}
    assert all(c.variants and set(c.variants) <= names and c.seed for c in seed.claims)


@pytest.mark.parametrize("name, variant", CASES)
def test_every_seed_finding_holds_on_the_seed_s_own_rows(name, variant):
    study = _load(name)
    seed = seeds.SEEDS[name]
    rows = next(v for v in seed.variants if v.name == variant).rows
    assert len(seeds.placed(study, next(v for v in seed.variants if v.name == variant))) == len(
        rows
    ), "every seed row stands on a cell of the study"
    got = _verdicts(study, variant)
    checked = [c for c in seed.claims if variant in c.variants]
    assert checked, "a variant no claim is checked on"
    for claim in checked:
        v = got[claim.text]
        assert v.verdict == "holds", v.line()
        assert f"; seed: {claim.seed}: **holds**" in v.line()


def _old_findings(tmp_path, name: str, findings_yaml: str):
    """STUDY's file with FINDINGS_YAML in place of its findings (same name, same cells)."""
    text = (spec.shipped_dir() / f"{name}.yaml").read_text().split("\nfindings:")[0]
    path = tmp_path / f"old_{name}.yaml"
    path.write_text(f"name: {name}\n{text}\nfindings:\n{findings_yaml}")
    return _load(path)


def test_the_pooled_cnn_scaling_findings_did_not_hold_on_the_seed_s_own_table(tmp_path):
    """Pooled over every model and GPU count, the old findings failed on the DGX-1 table:
    AlexNet scales to 75% of ideal at 8 GPUs, VGG16's real data runs at 0.83x."""
    old = _old_findings(
        tmp_path,
        "cnn_scaling",
        "  - text: scales\n"
        "    check: {kind: scaling, part: train, device: gpu, band: at least 90% of ideal}\n"
        "  - text: real data\n"
        "    check: {kind: data_ratio, part: train, device: gpu, a: synthetic, b: jpeg, "
        "band: 0.95x-1.05x, except: [alexnet]}\n",
    )
    got = _verdicts(old, "DGX-1 P100")
    assert got["scales"].verdict == "does not hold here"
    assert "75% [95%: 75–75] of ideal at 8 devices (alexnet, synthetic)" in got["scales"].measured
    assert "88% [95%: 88–88] of ideal at 8 devices (vgg16, synthetic)" in got["scales"].measured
    assert got["real data"].verdict == "does not hold here"
    assert "jpeg -17% vs synthetic (vgg16, 8 GPU nccl)" in got["real data"].measured
    # The same table through today's findings, restricted to what the seed said: holds.
    for v in _verdicts(_load("cnn_scaling"), "DGX-1 P100").values():
        assert v.verdict == "holds", v.line()


def test_nccl_winning_at_8_gpus_for_every_model_contradicted_the_seed_s_small_nets(tmp_path):
    """The old "NCCL wins at 8 GPUs" over every model cannot hold with "small nets scale
    best with CPU aggregation": no rerun could pass both, the seed's text least of all."""
    old = _old_findings(
        tmp_path,
        "strategies",
        "  - text: NCCL wins at 8 GPUs\n"
        "    check: {kind: best_method, part: train, device: gpu, devices: 8, expect: [nccl]}\n",
    )
    v = _verdicts(old, seed_rows.FROM_THE_TEXT)["NCCL wins at 8 GPUs"]
    assert v.verdict == "does not hold here"
    assert "reduce_to_cpu fastest for resnet50 at 8 devices" in v.measured


def test_the_cnn_and_riseml_rows_are_the_published_figures():
    figures = {
        (f.set, f.model, f.hardware, f.devices, f.data): f.examples_per_sec
        for f in published_lib.FIGURES
    }
    dgx1 = seeds.SEEDS["cnn_scaling"].variants[0]
    row = next(r for r in dgx1.rows if (r.model, r.data, r.setup) == ("resnet50", "jpeg", "8 GPU"))
    assert row.rate == figures[("tf-dgx1", "ResNet-50", "DGX-1 P100", 8, "real")] == 1630
    lstm = "bidirectional LSTM text classifier (1024 hidden)"
    v100 = next(v for v in seeds.SEEDS["tpu_vs_gpu"].variants if v.name == "V100")
    rates = {r.setup: r.rate for r in v100.rows if r.model == "bilstm1024"}
    assert rates == {
        "1 GPU": figures[("riseml", lstm, "V100", 1, "synthetic")],
        "Cloud TPU": figures[("riseml", lstm, "Cloud TPU (4 TPUv2 chips)", 1, "synthetic")],
    }


def test_a_tpu_finding_prints_the_measured_ratio_beside_the_seed_s_with_the_machines():
    study = _load("tpu_vs_gpu")
    host = cells.Host(cores=tuple(range(8)), gpus=1, gpu_name="H100", tpu=True)
    got = {}
    for c in cells.expand(study, "full"):
        if c.model.model == "resnet50" and c.setup.label in ("Cloud TPU", "1 GPU"):
            tpu = c.setup.label == "Cloud TPU"
            runs = [2290.0, 2300.0, 2310.0] if tpu else [990.0, 1000.0, 1010.0]
            got[c.id] = measured.Measured(
                cell=c,
                trials=3,
                rate=sum(runs) / 3,
                usd_hour=None,
                usd_epoch=None,
                sec_epoch=None,
                usd_million=None,
                accelerator="tpu" if tpu else "gpu",
                machine="gcp:tpu-v5e-8" if tpu else "gcp:a3-highgpu-1g",
                pricing=Basis.ON_DEMAND,
                batch=None,
                paths=(),
                rate_ci=measured.interval(runs),
            )
    results = measured.Results(
        study, "full", host, "runs", tuple(cells.expand(study, "full")), got, {}, repeats=3
    )
    line = next(v for v in findings.check_all(results) if "ResNet-50" in v.finding).line()
    assert line == (
        "- ResNet-50 trains at least 4x as fast on one Cloud TPU as on one GPU (band: at least "
        "4x) — Cloud TPU 2.30x [95%: 2.22–2.38] 1 GPU (resnet50: 2,300 vs 1,000/s; measured: "
        "gcp:tpu-v5e-8 vs gcp:a3-highgpu-1g); seed: 5.1x a V100, 8.4x a P100, on one Cloud TPU "
        "= a v2-8 (4 chips): **does not hold here**"
    )


def test_a_report_shows_the_seed_s_figure_beside_a_finding_never_in_a_table(tmp_path):
    """Seed rows are for the self-check: a real report reads records only."""
    study = _load("cnn_scaling")
    host = cells.Host(cores=(0, 1), gpus=0, gpu_name="", tpu=False)
    results = measured.collect(study, cells.expand(study, "full"), host, str(tmp_path), "full")
    text = report.render(results, [])
    tables = text.split("## Published")[0]
    assert "No cell measured yet." in tables and "1,630" not in tables
    findings_part = text.split("## Findings")[1]
    assert "seed: DGX-1 P100 real/synthetic 0.94x-1.01x" in findings_part


def test_the_docs_findings_table_lists_every_shipped_finding_with_its_band():
    """docs/studies.md's table under "Bands and stand-ins" is the shipped findings, exactly."""
    from pathlib import Path

    docs = Path(__file__).resolve().parents[2] / "docs" / "studies.md"
    section = docs.read_text().split("\n## Bands and stand-ins")[1].split("\n## ")[0]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| `")]
    listed = sorted((r[0].strip("| `"), r[2], r[3]) for r in rows)
    shipped = sorted(
        (name, f.text, bands.shown(f.check) or "—")
        for name in spec.shipped()
        for f in _load(name).findings
    )
    assert listed == shipped
