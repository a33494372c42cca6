"""The host CPU as records describe it: read from /proc/cpuinfo, as py-cpuinfo reads it."""

import os
import subprocess
import sys

import pytest

from tpubench.hardware import probe

X86 = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz
flags\t\t: fpu sse4_2 avx avx2 fma avx512f avx512_vnni avx512_bf16 amx_bf16 amx_tile

processor\t: 1
model name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz
flags\t\t: fpu sse4_2 avx avx2 fma avx512f avx512_vnni avx512_bf16 amx_bf16 amx_tile
"""
ARM_NAMED = "processor\t: 0\nmodel name\t: Neoverse-V2\nFeatures\t: fp asimd evtstrm sve\n"
ARM_UNNAMED = "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm\n"


def test_x86_and_named_arm_cpus_are_read_from_the_file(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(X86)
    brand, flags = probe._proc_cpuinfo(str(path))
    assert brand == "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz"
    assert {"amx_bf16", "amx_tile", "avx512_bf16"} <= flags
    path.write_text(ARM_NAMED)
    assert probe._proc_cpuinfo(str(path)) == ("Neoverse-V2", {"fp", "asimd", "evtstrm", "sve"})


def test_a_file_that_names_no_cpu_leaves_it_to_py_cpuinfo(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(ARM_UNNAMED)
    assert probe._proc_cpuinfo(str(path)) is None
    assert probe._proc_cpuinfo(str(tmp_path / "missing")) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/cpuinfo is Linux's")
def test_this_host_reads_as_py_cpuinfo_reads_it():
    import cpuinfo

    info = cpuinfo.get_cpu_info()  # a second: the slow way, for comparison
    mine = probe.cpu()
    assert mine["model"] == info["brand_raw"]
    assert mine["arch"] == info["arch"]
    assert mine["isa"] == sorted(f for f in probe.ISA_FLAGS if f in info.get("flags", []))


ONEDNN_CHECK = (
    "from tpubench.hardware import probe; "
    "from tensorflow.python.util import _pywrap_util_port as p; "
    "print(probe.onednn()); print(p.IsMklEnabled())"
)


@pytest.mark.parametrize("setting", [None, "0", "1"])
def test_the_record_says_whether_onednn_is_on_in_this_process_and_why(setting):
    # TensorFlow's default depends on the CPU (off on many AMD EPYC parts), so
    # the record says what the process has, not what the variable says.
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    if setting is not None:
        env["TF_ENABLE_ONEDNN_OPTS"] = setting
    done = subprocess.run(
        [sys.executable, "-c", ONEDNN_CHECK], env=env, capture_output=True, text=True, check=True
    )
    said, enabled = done.stdout.split("\n")[:2]
    state = "on" if enabled == "True" else "off"
    why = (
        "TensorFlow's default for this CPU"
        if setting is None
        else f"TF_ENABLE_ONEDNN_OPTS={setting}"
    )
    assert said == f"{state} ({why})"
    if setting is not None:
        assert state == ("on" if setting == "1" else "off")
