"""docs/cli.md lists every tpubench-launch option; docs/launch.md's ids match its sweep files."""

import pathlib
import re

import pytest

from tpubench_launch import cli
from tpubench_launch.sweep import file as sweep_file

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _options(sub: str) -> list[str]:
    parser = cli.parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    return sorted(
        s
        for action in subparsers.choices[sub]._actions
        for s in action.option_strings
        if s.startswith("--") and s != "--help"
    )


@pytest.mark.parametrize("sub", ["local-cluster", "sweep", "gke"])
def test_every_launch_option_is_in_cli_md(sub):
    text = (ROOT / "docs" / "cli.md").read_text()
    section = text.split(f"### `tpubench-launch {sub}")[1].split("\n## ")[0].split("\n### ")[0]
    missing = [o for o in _options(sub) if f"`{o}`" not in section]
    assert not missing, f"docs/cli.md does not document tpubench-launch {sub} options: {missing}"


def test_tutorial_ids_are_what_its_sweep_files_give(tmp_path):
    """The ids (and so the commands) shown in launch.md come from the files shown there."""
    text = (ROOT / "docs" / "launch.md").read_text()
    # threads.yaml is written by a heredoc (the tutorial runs), tpu.yaml is shown as YAML
    heredocs = re.findall(r"cat > \S+ <<'EOF'\n(.*?\n)EOF\n", text, re.S)
    blocks = heredocs + re.findall(r"```yaml\n(.*?)```", text, re.S)
    files = [b for b in blocks if "grid:" in b]
    assert len(files) == 3  # threads.yaml, tpu.yaml and sky.yaml
    threads, tpu, sky = (tmp_path / "threads.yaml"), (tmp_path / "tpu.yaml"), tmp_path / "sky.yaml"
    threads.write_text(files[0])
    tpu.write_text(files[1])
    sky.write_text(files[2])
    grown = tmp_path / "grown.yaml"
    grown.write_text(files[0].replace("batch_sizes: [128]", "batch_sizes: [128, 256]"))
    ids = set()
    for path, executor in [
        (threads, "local"),
        (grown, "local"),
        (grown, "gce"),
        (tpu, "tpu-vm"),
        (sky, "skypilot"),
    ]:
        ids |= {c.id for c in sweep_file.load(str(path), executor).configs}
    shown = set(re.findall(r"\bcfg-[0-9a-f]{10}\b", text)) - {"cfg-aed90ac34f"}  # the GPU aside
    assert shown and shown <= ids, sorted(shown - ids)
