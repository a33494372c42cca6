"""Whether this process may use AMX, not only whether the CPU lists it.

Intel's AMX (Sapphire Rapids and later) runs bf16 matrix products on tile
registers whose state is too large for the default signal frame, so Linux
hands it out per process: a program asks with `arch_prctl(ARCH_REQ_XCOMP_PERM,
XFEATURE_XTILEDATA)` (oneDNN asks on its first AMX kernel).  A kernel older
than 5.16 has no such request and refuses every AMX instruction; a hypervisor
or a seccomp policy can refuse it too.  /proc/cpuinfo still lists `amx_tile`
and `amx_bf16` there, and bf16 then runs on slower AVX-512 kernels (a 2.4x
gap reported on Sapphire Rapids between Linux 5.10 and 6.1).

`state()` answers with one of:
  "usable", "listed but not permitted (kernel X: why)", "absent".
`bf16_path()` names the fastest bf16 arithmetic this process has: "amx"
(Intel Sapphire Rapids and later), "avx512_bf16" (AVX-512 BF16 dot products
without AMX: AMD EPYC Zen 4 and Zen 5, Intel Cooper Lake) or "none".
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import sys

ARCH_REQ_XCOMP_PERM = 0x1023  # arch/x86/include/uapi/asm/prctl.h
XFEATURE_XTILEDATA = 18
SYS_ARCH_PRCTL = 158  # x86-64 system call number

USABLE = "usable"
ABSENT = "absent"
REFUSED = "listed but not permitted"


def _request_tiles() -> tuple[bool, str]:
    """(granted, why not) for this process's request to use the AMX tile state."""
    kernel = platform.release()
    if not sys.platform.startswith("linux") or platform.machine().lower() not in (
        "x86_64",
        "amd64",
    ):
        return False, f"{platform.system()} {platform.machine()} has no AMX permission call"
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        rc = libc.syscall(SYS_ARCH_PRCTL, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)
    except (OSError, AttributeError) as e:
        return False, f"kernel {kernel}: the request could not be made ({e})"
    if rc == 0:
        return True, ""
    err = ctypes.get_errno()
    if err == errno.EINVAL:
        return False, f"kernel {kernel} does not grant the AMX tile state; AMX needs Linux >= 5.16"
    return False, f"kernel {kernel}: {os.strerror(err) if err else 'refused'}"


def state(isa, request=_request_tiles) -> str:
    """What AMX is to this process, given the CPU's ISA flags (probe.ISA_FLAGS names)."""
    if "amx_tile" not in set(isa):
        return ABSENT
    granted, why = request()
    return USABLE if granted else f"{REFUSED} ({why})"


# The bf16 paths a CPU can offer, fastest first (a record's `hardware.cpu.bf16_path`).
AMX_PATH = "amx"
AVX512_BF16_PATH = "avx512_bf16"
NO_BF16_PATH = "none"
BF16_PATHS = (AMX_PATH, AVX512_BF16_PATH, NO_BF16_PATH)


def bf16_path(cpu: dict) -> str:
    """The bf16 path of CPU (probe.cpu(), or a record's `hardware.cpu`): one of BF16_PATHS.

    AMX counts only where this process may use it; a CPU that lists AMX but is
    refused it runs bf16 on its AVX-512 BF16 instructions, as one without AMX.
    """
    if (cpu.get("amx") or ABSENT) == USABLE:
        return AMX_PATH
    return AVX512_BF16_PATH if "avx512_bf16" in set(cpu.get("isa") or ()) else NO_BF16_PATH


def slow_bf16(cpu: dict) -> str | None:
    """Why bf16 on this CPU will run slowly (one line), or None when it has a fast path.

    CPU is probe.cpu(): its `isa` list and its `amx` state.
    """
    isa = set(cpu.get("isa") or ())
    amx = cpu.get("amx") or ABSENT
    if amx.startswith(REFUSED):
        fallback = "AVX-512 bf16" if "avx512_bf16" in isa else "fp32 arithmetic"
        return (
            f"bf16 will be slow here: the CPU lists AMX but this process may not use it "
            f"({amx.removeprefix(REFUSED + ' (').removesuffix(')')}); "
            f"TensorFlow falls back to {fallback}"
        )
    if amx == ABSENT and "avx512_bf16" not in isa:
        return (
            "bf16 will be slow here: this CPU has neither AMX nor AVX-512 bf16, so TensorFlow "
            "converts to and from fp32 around each operation; fp32 is likely faster"
        )
    return None
