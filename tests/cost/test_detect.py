"""Pricing what ran: device names to catalog ids, and the smallest machine that carries them."""

import pathlib

import pytest

from tpubench.core.basis import Basis
from tpubench.cost import catalog, detect, run


@pytest.fixture(scope="module")
def shipped():
    return catalog.load()


def gpus(name, n=1):
    return [{"kind": "gpu", "name": name, "compute_capability": (9, 0)}] * n


@pytest.mark.parametrize(
    "name, ident",
    [
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("NVIDIA H100 PCIe", "h100"),
        ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
        ("NVIDIA A100 80GB PCIe", "a100-80gb"),
        ("Tesla V100-SXM2-16GB", "v100"),
        ("Tesla T4", "t4"),
        ("NVIDIA L4", "l4"),
        ("NVIDIA A10G", "a10g"),
        ("Tesla P100-PCIE-16GB", "p100"),
        ("Tesla K80", "k80"),
        ("NVIDIA GeForce RTX 4090", None),
    ],
)
def test_gpu_names_map_to_catalog_ids(name, ident):
    assert detect.accelerator_id("gpu", name) == ident


@pytest.mark.parametrize(
    "name, ident",
    [("TPU v2", "tpu-v2"), ("TPU v4", "tpu-v4"), ("TPU v5 lite", "tpu-v5e"), ("TPU v5p", "tpu-v5p"),
     ("TPU v6 lite", "tpu-v6e"), ("TPU v6e", "tpu-v6e")],
)  # fmt: skip
def test_tpu_names_map_to_catalog_ids(name, ident):
    assert detect.accelerator_id("tpu", name) == ident


def test_detect_counts_like_devices_and_ignores_a_stray_one():
    found = detect.detect(gpus("Tesla T4", 4) + gpus("NVIDIA GeForce GT 710"))
    assert (found.kind, found.id, found.count) == ("gpu", "t4", 4)
    assert detect.detect([]) is None


def test_one_h100_is_priced_as_a3_highgpu_1g_not_as_a_cpu_vm(shipped):
    prices, note = run.prices(accelerators=gpus("NVIDIA H100 80GB HBM3"))
    first = prices[0]
    assert (first.machine, first.pricing) == ("gcp:a3-highgpu-1g", "on_demand")
    assert first.usd_per_hour == shipped.lookup("gcp:a3-highgpu-1g").on_demand
    assert "gcp:a3-highgpu-1g" in note and "1 x NVIDIA H100 80GB HBM3" in note
    assert not any(p.machine.startswith("gcp:n1-") for p in prices)
    # AWS sells H100s eight at a time: said, not hidden.
    assert "aws:p5.48xlarge (carries 8)" in note


def test_a_gpu_sold_alone_gets_an_n1_host_with_4_vcpus_per_gpu(shipped):
    prices, note = run.prices(accelerators=gpus("Tesla V100-SXM2-16GB", 2))
    assert prices[0].machine == "gcp:n1-standard-8+2xgcp:v100"
    expected = shipped.lookup("gcp:n1-standard-8").on_demand + 2 * 2.48
    assert prices[0].usd_per_hour == pytest.approx(expected)


def test_l4_is_never_put_on_an_n1_host():
    prices, _ = run.prices(accelerators=gpus("NVIDIA L4"))
    assert prices[0].machine == "gcp:g2-standard-4"


def test_the_smallest_machine_with_enough_accelerators_is_chosen():
    prices, note = run.prices(accelerators=gpus("NVIDIA A100-SXM4-40GB", 3))
    assert prices[0].machine == "gcp:a2-highgpu-4g"
    assert "it carries 4" in note


def test_tpu_chips_price_as_a_slice(shipped):
    prices, note = run.prices(accelerators=[{"kind": "tpu", "name": "TPU v5 lite"}] * 8)
    assert prices[0].machine == "gcp:tpu-v5e-8"
    assert prices[0].usd_per_hour == pytest.approx(8 * shipped.lookup("gcp:tpu-v5e").on_demand)


def test_h200_and_b200_runs_price_as_their_v9_machines():
    """Before the v9 rows an H200 run had no catalog machine; now it has, and B200 too."""
    for name, machine, usd in (
        ("NVIDIA H200", "gcp:a3-ultragpu-8g", 86.75992),
        ("NVIDIA B200", "gcp:a4-highgpu-8g", 90.216),
    ):
        prices, note = run.prices(accelerators=gpus(name))
        assert (prices[0].machine, prices[0].usd_per_hour) == (machine, usd)
        assert "it carries 8" in note


@pytest.mark.parametrize("name", ["Tesla K80", "NVIDIA GeForce RTX 4090"])
def test_no_catalog_machine_is_one_line_and_no_price(name):
    prices, note = run.prices(accelerators=gpus(name))
    assert prices == []
    assert note.startswith("not priced:") and "\n" not in note and "--machine" in note


def test_a_cpu_run_is_priced_as_vms_with_the_host_vcpus():
    prices, note = run.prices(accelerators=[], host_vcpus=6)
    assert [p.machine for p in prices if p.pricing == "on_demand"] == [
        "gcp:n1-standard-8",
        "gcp:n1-highcpu-8",
        "gcp:c2-standard-8",
    ]
    assert "vCPU" in note


AMX_CPU = {
    "model": "Intel(R) Xeon(R) Platinum 8481C",
    "isa": ["amx_bf16", "avx512_bf16"],
    "amx": "usable",
}
XEON_CPU = {"model": "Intel(R) Xeon(R) CPU @ 2.20GHz", "isa": ["avx512f"], "amx": "absent"}


@pytest.mark.parametrize(
    ("vcpus", "on_demand", "spot"),
    [
        (2, {"gcp:n4-standard-2": 0.09477, "gcp:c3-standard-4": 0.20161},
         {"gcp:n4-standard-2": 0.03791, "gcp:c3-standard-4": 0.03151}),
        (20, {"gcp:n4-standard-32": 1.51635, "gcp:c3-standard-22": 1.10884},
         {"gcp:n4-standard-32": 0.60653, "gcp:c3-standard-22": 0.17332}),
    ],
)  # fmt: skip
def test_a_cpu_with_amx_is_priced_as_vms_whose_cpus_have_it(vcpus, on_demand, spot):
    """The rate an AMX CPU measured is one an n1 VM (no AMX) cannot deliver."""
    for basis, want in ((Basis.ON_DEMAND, on_demand), (Basis.SPOT, spot)):
        prices, note = run.prices(
            accelerators=[], host_vcpus=vcpus, cpu=AMX_CPU, pricing_kind=basis
        )
        assert {p.machine: p.usd_per_hour for p in prices if p.pricing == basis} == want
        assert note.startswith("priced as cloud VMs whose CPUs, like this host's, have AMX,")
    prices, note = run.prices(accelerators=[], host_vcpus=vcpus, cpu=XEON_CPU)
    assert all(p.machine.startswith(("gcp:n1-", "gcp:c2-")) for p in prices), prices
    assert "AMX" not in note


def test_an_amx_host_falls_back_to_n1_when_the_catalog_has_no_amx_vm(tmp_path):
    shipped = (pathlib.Path(run.__file__).parent / "prices.csv").read_text().splitlines()
    kept = [r for r in shipped if not r.startswith(("gcp:n4-", "gcp:c3-"))]
    catalog = tmp_path / "prices.csv"
    catalog.write_text("\n".join(kept) + "\n")
    prices, note = run.prices(accelerators=[], host_vcpus=2, cpu=AMX_CPU, catalog_path=str(catalog))
    assert [p.machine for p in prices if p.pricing == "on_demand"][0] == "gcp:n1-standard-2"
    assert "AMX" not in note
    # Nor does a catalog with neither AMX nor N1 rows call its C2 VM one with AMX.
    catalog.write_text("\n".join(r for r in kept if not r.startswith("gcp:n1-")) + "\n")
    prices, note = run.prices(accelerators=[], host_vcpus=8, cpu=AMX_CPU, catalog_path=str(catalog))
    assert [p.machine for p in prices if p.pricing == "on_demand"] == ["gcp:c2-standard-8"]
    assert "AMX" not in note


def test_machine_and_override_win_over_detection():
    prices, note = run.prices(machines=("aws:g5.xlarge",), accelerators=gpus("NVIDIA H100"))
    assert prices[0].machine == "aws:g5.xlarge" and note is None
    prices, note = run.prices(price_per_hour=3.0, accelerators=gpus("NVIDIA H100"))
    assert (prices[0].pricing, prices[0].usd_per_hour) == ("override", 3.0)


AMD_BF16_CPU = {"model": "AMD EPYC 9B45", "isa": ["avx512f", "avx512_bf16"], "amx": "absent"}
AMD_CPU = {"model": "AMD EPYC 7B12", "isa": ["avx2"], "amx": "absent"}


@pytest.mark.parametrize(
    ("cpu", "vcpus", "on_demand", "spot"),
    [
        (AMD_BF16_CPU, 2, {"gcp:c4d-standard-2": 0.08988, "gcp:c3d-standard-4": 0.1816},
         {"gcp:c4d-standard-2": 0.03155, "gcp:c3d-standard-4": 0.03852}),
        (AMD_BF16_CPU, 8, {"gcp:c4d-standard-8": 0.36999, "gcp:c3d-standard-8": 0.36319},
         {"gcp:c4d-standard-8": 0.12988, "gcp:c3d-standard-8": 0.07704}),
        # The catalog has no n2d-standard-2: the smallest n2d it prices, not an n1.
        (AMD_CPU, 2, {"gcp:n2d-standard-4": 0.16898}, {"gcp:n2d-standard-4": 0.04448}),
        (AMD_CPU, 8, {"gcp:n2d-standard-8": 0.33797}, {"gcp:n2d-standard-8": 0.08896}),
    ],
)  # fmt: skip
def test_an_amd_epyc_is_priced_as_amd_vms_of_its_bf16_generation(cpu, vcpus, on_demand, spot):
    """Zen 4/5 (AVX-512 BF16) as c4d and c3d, older EPYCs as n2d, on both bases."""
    kind = "AMD EPYC with AVX-512 BF16" if cpu is AMD_BF16_CPU else "AMD EPYC"
    for basis, want in ((Basis.ON_DEMAND, on_demand), (Basis.SPOT, spot)):
        prices, note = run.prices(accelerators=[], host_vcpus=vcpus, cpu=cpu, pricing_kind=basis)
        assert {p.machine: p.usd_per_hour for p in prices if p.pricing == basis} == want
        assert note.startswith(f"priced as cloud VMs whose CPUs, like this host's, are {kind},")
