"""A child's command line: flags as argv, the interpreter it runs in, its environment.

Every command line tpubench and tpubench-launch hand to a child process is
built here, so a flag is spelled one way (absl's: True -> --name, False ->
--noname, lists comma-joined, None left out) wherever it comes from, and
every Python a child runs imports only from its installation: this
interpreter's with `-P` (isolated_python), a VM's virtualenv or a container
image's with `-I` (installed_python).  The working directory, where a
downloaded results folder may hold `json.py` or a folder named `tpubench`,
is never on a child's sys.path (docs/security.md, "Code only from the
installation"; tests/security/test_installed_code.py checks that no other
module starts a Python).
"""

from __future__ import annotations

import os
import shlex
import sys


def flag(name: str, value) -> str:
    """One absl flag: True -> --name, False -> --noname, lists comma-joined."""
    if value is True:
        return f"--{name}"
    if value is False:
        return f"--no{name}"
    if isinstance(value, (list, tuple)):
        return f"--{name}={','.join(str(v) for v in value)}"
    return f"--{name}={value}"


def flags_argv(flags: dict) -> list[str]:
    """Flags in the order given; None values are left out (tpubench's default applies)."""
    return [flag(k, v) for k, v in flags.items() if v is not None]


# Python 3.10 has no -P: drop the working directory ('' from -c) before running the module.
SAFE_PATH_310 = "import runpy, sys; del sys.path[0]; runpy.run_module(sys.argv.pop(1), "
SAFE_PATH_310 += "run_name='__main__', alter_sys=True)"


def isolated_python(module: str) -> list[str]:
    """`python -P -m MODULE` in this interpreter: the working directory stays off
    sys.path (a folder named like the package there is not the package); PYTHONPATH
    and site-packages still name the one to import.  On Python 3.10, which has no
    -P, a -c bootstrap drops the working directory and runs MODULE the same way."""
    if sys.version_info >= (3, 11):
        return [sys.executable, "-P", "-m", module]
    return [sys.executable, "-c", SAFE_PATH_310, module]


def installed_python(python: str, *args: str) -> list[str]:
    """`PYTHON -I ARGS` (`-m MODULE ...` or `-c CODE`) for another installation's interpreter:
    a VM's virtualenv, a container image's python3, a VM's system Python, whose version is
    not known here.  `-I` (Python 3.4 and later) keeps the working directory (the VM's home,
    the image's WORKDIR), PYTHON* variables and the user's site-packages off sys.path: only
    that installation's own."""
    return [python, "-I", *args]


def python_argv(module: str, *args: str) -> list[str]:
    """`python -P -m MODULE ARGS` (isolated_python); child_env says where tpubench is."""
    return [*isolated_python(module), *args]


def child_env() -> dict:
    """This process's environment with the directory that holds the tpubench it imported
    first on PYTHONPATH: a child started by python_argv imports the same code."""
    import tpubench

    root = os.path.dirname(os.path.dirname(os.path.abspath(tpubench.__file__)))
    env = dict(os.environ)
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != root]
    env["PYTHONPATH"] = os.pathsep.join([root, *rest])
    return env


def taskset(cores) -> list[str]:
    """The words that show a pinned child as a user would type it (`taskset -c 0,1`);
    none when CORES is empty or None.  The run itself pins with sched_setaffinity."""
    return ["taskset", "-c", ",".join(map(str, sorted(cores)))] if cores else []


def shell(argv: list[str]) -> str:
    """ARGV as one copy-pasteable shell line."""
    return shlex.join(argv)
