"""AMX: listed by the CPU is not usable by the process; the record and a bf16 run say which."""

from __future__ import annotations

import platform

import pytest

from tpubench.core.precision import Precision
from tpubench.hardware import amx, probe
from tpubench.run import session


def test_a_cpu_without_the_tile_flag_has_no_amx_whatever_the_kernel_says():
    assert amx.state({"avx512f", "avx512_bf16"}, lambda: (True, "")) == "absent"


def test_a_listed_amx_the_kernel_refuses_is_named_with_the_kernel_and_why():
    refused = lambda: (False, "kernel 5.10.0 does not grant the AMX tile state")  # noqa: E731
    got = amx.state({"amx_tile", "amx_bf16"}, refused)
    assert got == "listed but not permitted (kernel 5.10.0 does not grant the AMX tile state)"
    assert amx.state({"amx_tile", "amx_bf16"}, lambda: (True, "")) == "usable"


def test_this_hosts_answer_matches_its_cpuinfo_and_kernel():
    cpu = probe.cpu()
    if "amx_tile" not in cpu["isa"]:
        assert cpu["amx"] == "absent"
        return
    major, minor = (int(x) for x in platform.release().split(".")[:2])
    if (major, minor) < (5, 16):
        assert cpu["amx"].startswith("listed but not permitted (kernel ")
    else:  # a new enough kernel grants it unless something refuses: then it says what
        assert cpu["amx"] == "usable" or cpu["amx"].startswith("listed but not permitted")


@pytest.mark.parametrize(
    "cpu, expected",
    [
        ({"isa": ["amx_tile", "amx_bf16", "avx512_bf16"], "amx": "usable"}, None),
        ({"isa": ["avx512_bf16"], "amx": "absent"}, None),
        (
            {
                "isa": ["amx_tile", "avx512_bf16"],
                "amx": "listed but not permitted (kernel 5.10.0: x)",
            },
            "bf16 will be slow here: the CPU lists AMX but this process may not use it "
            "(kernel 5.10.0: x); TensorFlow falls back to AVX-512 bf16",
        ),
        (
            {"isa": ["avx2"], "amx": "absent"},
            "bf16 will be slow here: this CPU has neither AMX nor AVX-512 bf16, so TensorFlow "
            "converts to and from fp32 around each operation; fp32 is likely faster",
        ),
    ],
    ids=["amx", "avx512_bf16", "amx_refused", "no_bf16"],
)
def test_a_cpu_bf16_run_says_in_one_line_why_it_will_be_slow(monkeypatch, capsys, cpu, expected):
    class Placement:
        accelerator = "cpu"

    monkeypatch.setattr(probe, "cpu", lambda: {**cpu, "model": "test CPU"})
    monkeypatch.setattr(probe, "accelerators", lambda placement: [])
    monkeypatch.setattr(probe, "software", lambda: {})
    record = session.probe(Placement(), Precision.BF16)
    assert record["hardware"]["cpu"]["amx"] == cpu["amx"]
    said = capsys.readouterr().err.strip()
    assert said == (f"tpubench: note: {expected}" if expected else "")
    session.probe(Placement(), Precision.FP32)  # fp32 is never slowed by it
    assert capsys.readouterr().err == ""
