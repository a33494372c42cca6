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
