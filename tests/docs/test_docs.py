"""The docs stay true: every flag is documented, the tutorial model runs."""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

from tpubench.cli import subcommands  # noqa: E402 - pure Python, no TensorFlow


@pytest.mark.parametrize("sub", sorted(subcommands.BY_NAME))
def test_every_flag_is_in_cli_md(sub):
    out = subprocess.run(
        [sys.executable, "-m", "tpubench.cli.flags", sub],
        capture_output=True,
        text=True,
        check=True,
    )
    names = json.loads(out.stdout)
    text = (ROOT / "docs" / "cli.md").read_text()
    section = text.split(f"## `tpubench {sub}")[1].split("\n## `tpubench ")[0]
    common = text.split("## Common")[1]
    missing = [n for n in names if f"`--{n}`" not in section and f"`--{n}`" not in common]
    assert not missing, f"docs/cli.md does not document {sub} flags: {missing}"


def _tutorial_model(tmp_path) -> pathlib.Path:
    text = (ROOT / "docs" / "adding_a_model.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    assert len(code.splitlines()) <= 70, "the tutorial promises a model in about 60 lines"
    path = tmp_path / "lenet.py"
    path.write_text(code)
    return path


def _train(tmp_path, *args):
    results = tmp_path / "runs"
    out = subprocess.run(
        [sys.executable, "-m", "tpubench", "train", f"--results_dir={results}", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    (record_path,) = sorted(results.glob("*.json"))
    return json.loads(record_path.read_text())


def test_tutorial_model_trains_on_digits(tmp_path):
    lenet = _tutorial_model(tmp_path)
    rec = _train(
        tmp_path,
        f"--model_module={lenet}",
        "--model=lenet5",
        "--train_steps=150",
        "--steps_per_loop=10",
    )
    assert rec["model"]["name"] == "lenet5"
    assert rec["data"]["name"] == "digits"
    assert rec["mfu"]["parameters"] == 61_706  # LeNet-5's classic count
    assert rec["results"]["eval"]["accuracy"] >= 0.85


def test_tutorial_model_same_first_loss_on_two_replicas(tmp_path):
    lenet = _tutorial_model(tmp_path)
    common = [
        f"--model_module={lenet}",
        "--model=lenet5",
        "--use_synthetic_data",
        "--batch_size=8",
        "--train_steps=1",
        "--tiny",
    ]
    one = _train(tmp_path / "one", *common)
    two = _train(tmp_path / "two", *common, "--num_cpu_devices=2")
    assert two["placement"]["num_replicas"] == 2
    assert two["results"]["final_loss"] == pytest.approx(one["results"]["final_loss"], rel=1e-5)


def _labels(text: str) -> list[str]:
    """The summary's row labels and the cost table's column names, in order."""
    # A long value wraps onto a line with an empty label (the MFU row's peak
    # source grows a note when the machine is busy): not a row of its own.
    rows = [m.strip() for m in re.findall(r"^│ ([^│]+?) +│", text, re.M) if m.strip()]
    # `writes (I/O)` shows only when writes blocked training noticeably (a busy machine).
    rows = [r for r in rows if r != "writes (I/O)"]
    summary = [r for r in rows if not r.startswith("gcp:")]  # cost rows start with a machine
    # Rows only a busy machine prints (its CPU peak is a busy probe): the sample is quiet.
    summary = [r for r in summary if r not in ("MFU warning", "peak note")]
    header = re.search(r"^┃(.*)┃$", text, re.M)
    columns = [c.strip() for c in header.group(1).split("┃")] if header else []
    return summary + ["|"] + columns


def test_readme_sample_shows_todays_rows(tmp_path):
    """The README's `make demo` sample has the rows and columns a real run prints today."""
    readme = (ROOT / "README.md").read_text()
    sample = readme.split("## What you see")[1].split("```\n")[1]
    out = subprocess.run(
        [sys.executable, "-m", "tpubench", "train", "--train_steps=20", "--eval_steps=2"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "120"},
    )
    assert out.returncode == 0, out.stderr
    real = _labels(out.stdout)
    assert "host CPU (all cores)" in real and "eval accuracy" in real
    assert _labels(sample) == real


def test_data_list_descriptions_stand_on_their_own():
    """No description points at text a user of the CLI cannot see (module docstrings, source)."""
    out = subprocess.run(
        [sys.executable, "-m", "tpubench", "data", "list", "--format=json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert {"digits", "pydoc_chars", "pydoc_topics", "imdb"} <= {r["dataset"] for r in rows}
    for r in rows:
        what = r["what"].lower()
        assert "docstring" not in what and "see the module" not in what, r
        assert len(what.split()) >= 6, f"{r['dataset']}: {r['what']!r} says too little"


def test_studies_md_says_what_each_seed_ran_for_every_setup_of_every_study():
    """docs/studies.md's seed-vs-tpubench tables cover each shipped study and name every
    setup label of its file, so a study that gains a setup gains a row."""
    from tpubench.study.spec import spec

    text = (ROOT / "docs" / "studies.md").read_text()
    section = text.split("## What each seed ran, and what tpubench runs for it", 1)[1]
    section = section.split("\n## ", 1)[0]
    tables = {
        block.split(" ", 1)[0]: block for block in section.split("\n### ")[1:]
    }  # study name -> its subsection
    names = spec.shipped()
    assert sorted(tables) == sorted(names)
    for name in names:
        study = spec.load(str(spec.shipped_dir() / f"{name}.yaml"))
        assert "| cells | the seed ran | tpubench runs |" in tables[name], name
        missing = {
            s.label for p in study.parts for s in p.setups if f"`{s.label}`" not in tables[name]
        }
        assert missing == set(), (name, missing)
