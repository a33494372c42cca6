"""`tpubench train --help` and `infer --help`: every flag once, in groups in the order a
first run needs them, the common ones first; no TensorFlow; exit 0."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from conftest import NO_TF_CLI

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


@pytest.mark.parametrize("sub", ["train", "infer"])
@pytest.mark.parametrize("ask", ["--help", "-h", "--helpshort"])
def test_help_groups_every_flag_once_with_the_common_ones_first(sub, ask):
    proc = subprocess.run(
        [sys.executable, "-c", NO_TF_CLI, sub, ask], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr  # NO_TF_CLI exits 99 had TensorFlow loaded
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"usage: tpubench {sub} [flags]")
    titles = [x for x in lines if x and not x.startswith(" ") and x.endswith(":")]
    assert [t for t in titles if t in ORDER] == ORDER  # in the order a first run needs
    shown = [re.sub(r"^--(\[no\])?", "", x.strip()) for x in lines if x.startswith("  --")]
    assert len(shown) == len(set(shown))  # each flag once
    assert set(shown) == _flags_of(sub) - {"flagfile"}  # none hidden, none invented
    assert shown[:3] == ["model", "params", "tiny"]  # the common ones first
    if sub == "train":
        assert "Other flags:" not in titles  # every train flag has its group


def test_helpfull_stays_absls_whole_list():
    proc = subprocess.run(
        [sys.executable, "-c", NO_TF_CLI, "train", "--helpfull"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "--train_steps" in proc.stdout
    assert "Model:" not in proc.stdout
