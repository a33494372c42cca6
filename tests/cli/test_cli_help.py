"""`tpubench SUBCOMMAND --help`: short (the common flags, a line each, in groups, then the
line to --helpfull); `--helpfull`: every flag once, in groups in the order a first run
needs them, the common ones first; no TensorFlow; exit 0."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from conftest import NO_TF_CLI

from tpubench.cli import subcommands

ORDER = [
    "Model:",
    "Steps, batches and evaluation:",
    "Data:",
    "Hardware and distribution:",
    "Precision and speed:",
    "Cost:",
    "Output, records and checkpoints:",
]


def _flags_of(sub: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-m", "tpubench.cli.flags", sub], capture_output=True, text=True
    )
    return set(json.loads(out.stdout))


SUBCOMMANDS = [s.name for s in subcommands.SUBCOMMANDS]


def _help(sub: str, ask: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", NO_TF_CLI, sub, ask], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("sub", SUBCOMMANDS)
def test_help_is_short_and_leads_to_helpfull(sub):
    for ask in ("--help", "-h", "--helpshort"):
        proc = _help(sub, ask)
        assert proc.returncode == 0, proc.stderr  # NO_TF_CLI exits 99 had TensorFlow loaded
        lines = proc.stdout.splitlines()
        assert len(lines) <= 45, proc.stdout
        assert lines[0].startswith(f"usage: tpubench {sub} [flags]")
        assert lines[-1] == f"all flags, with their defaults: tpubench {sub} --helpfull"
        assert max(map(len, lines)) <= 100  # a flag a line, cut at a word
        shown = {re.sub(r"^--(\[no\])?", "", x.split()[0]) for x in lines if x.startswith("  --")}
        assert shown <= _flags_of(sub)  # none invented
        if len(_flags_of(sub) - {"flagfile"}) <= 16:
            assert shown == _flags_of(sub) - {"flagfile"}  # a few flags: all of them
        elif sub in ("train", "infer", "tune"):
            assert {"model", "model_module", "batch_size" if sub != "tune" else "budget"} <= shown


@pytest.mark.parametrize("sub", ["train", "infer", "tune", "data", "report"])
def test_helpfull_groups_every_flag_once_with_the_common_ones_first(sub):
    proc = _help(sub, "--helpfull")
    assert proc.returncode == 0, proc.stderr  # NO_TF_CLI exits 99 had TensorFlow loaded
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"usage: tpubench {sub} [flags]")
    titles = [x for x in lines if x and not x.startswith(" ") and x.endswith(":")]
    if sub in ("train", "infer", "tune"):
        assert [t for t in titles if t in ORDER] == ORDER  # in the order a first run needs
    shown = [re.sub(r"^--(\[no\])?", "", x.strip()) for x in lines if x.startswith("  --")]
    assert len(shown) == len(set(shown))  # each flag once
    assert set(shown) == _flags_of(sub) - {"flagfile"}  # none hidden, none invented
    if sub in ("train", "infer", "tune"):
        assert shown[:3] == ["model", "params", "tiny"]  # the common ones first
    if sub in ("train", "tune"):
        assert "Other flags:" not in titles  # every train and tune flag has its group
