"""The sweep's cost preview fits the console (80-100 columns), however long its rows' names.

Before, its description column sat second and every line was as wide as the longest one
(about 115 columns for a GPU sweep); now the description comes last and folds under itself.
"""

from __future__ import annotations

import pytest

from tpubench_launch import preview

ROWS = [
    preview.Row(
        "cfg-22e9e89e65",
        "resnet50 gcp:n1-standard-32+8xgcp:v100 batch 1024 bf16 multi_worker 2w+1ps",
        14.74,
        700.0,
        "median of done",
    ),
    preview.Row(
        "cfg-76a9cc2abc",
        "mnist_mlp gcp:n1-standard-1 batch 128 1 thread(s)",
        0.0475,
        30.0,
        "estimate",
    ),
    preview.Row(
        "cfg-e85c3fdd53", "mnist_mlp gcp:n1-standard-2 batch 128 2 thread(s)", 0.095, 15.0, "done"
    ),
]
TITLE = (
    "cost preview (on_demand; VM price x estimated time incl. 300 s to create, install and "
    "delete, for every VM of each configuration):"
)


@pytest.mark.parametrize("cols", [80, 100])
def test_the_cost_preview_fits_the_console(cols, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(cols))  # the console's width, as a user's shell sets it
    text = preview.render(ROWS, TITLE)
    lines = text.splitlines()
    assert max(map(len, lines)) <= cols, text
    # Every configuration's figures stay on its own first line, its whole description follows.
    for r in ROWS:
        first = next(line for line in lines if line.startswith(r.config_id))
        assert "$" in first and ("estimate" in first or "done" in first or "median" in first)
        assert " ".join(r.describe.split()) in " ".join(text.split())
    assert any(line.startswith("total ") and "2 to run" in " ".join(lines) for line in lines)
    assert any(line.startswith("done ") for line in lines)
