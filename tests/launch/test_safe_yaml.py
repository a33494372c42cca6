"""Class C of issue 25: sweep files are parsed by one bounded, strict YAML loader.

Aliases and anchors are refused (a billion-laughs file took 95 s and 4 GB
before a MemoryError), duplicate keys name both lines (the last one used to
win silently), a file over the size limit is refused by its size before it is
parsed, deep nesting is refused; all in one line, exit 2.
"""

import subprocess
import sys
import time

import pytest

from tpubench.core import safe_yaml
from tpubench_launch import errors
from tpubench_launch.sweep import file as sweep_file

LAUGHS = (
    "a: &a [x, x, x, x, x, x, x, x, x]\n"
    + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}]\n"
        for i in range(9)
    )
    + "grid: {models: [mnist_mlp]}\n"
)


def _file(tmp_path, text):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return str(path)


def _cli(path):
    return subprocess.run(
        [sys.executable, "-m", "tpubench_launch.main", "sweep", path, "--dry-run"],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_billion_laughs_is_refused_at_once(tmp_path):
    path = _file(tmp_path, LAUGHS)
    start = time.monotonic()
    with pytest.raises(errors.UsageError, match=r"anchor|alias") as e:
        sweep_file.load(path, "local")
    assert time.monotonic() - start < 2
    assert "line 1" in str(e.value)
    proc = _cli(path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_a_single_alias_is_refused_too(tmp_path):
    text = "flags: &f {train_steps: 10}\ngrid: {models: [mnist_mlp]}\nestimate: *f\n"
    with pytest.raises(errors.UsageError, match="anchor"):
        sweep_file.load(_file(tmp_path, text), "local")


def test_duplicate_keys_name_both_lines(tmp_path):
    text = "name: a\ngrid:\n  models: [mnist_mlp]\n  models: [cnn]\n"
    with pytest.raises(errors.UsageError) as e:
        sweep_file.load(_file(tmp_path, text), "local")
    assert "'models'" in str(e.value) and "line 3" in str(e.value) and "line 4" in str(e.value)


def test_a_huge_file_is_refused_by_its_size(tmp_path):
    path = _file(tmp_path, "grid: {models: [mnist_mlp]}\n" + "# pad\n" * 400_000)
    with pytest.raises(errors.UsageError, match=r"2,400,028 bytes.*at most 1,048,576"):
        sweep_file.load(path, "local")


def test_deep_nesting_is_refused(tmp_path):
    text = "grid: " + "[" * 5000 + "]" * 5000 + "\n"
    with pytest.raises(errors.UsageError, match="nest"):
        sweep_file.load(_file(tmp_path, text), "local")


def test_python_tags_stay_refused_and_plain_files_load():
    with pytest.raises(safe_yaml.Refused):
        safe_yaml.loads("a: !!python/object/apply:os.system [id]\n", "x.yaml")
    assert safe_yaml.loads("a: [1, 2]\nb: {c: d}\n", "x.yaml") == {"a": [1, 2], "b": {"c": "d"}}


@pytest.mark.parametrize("value", ['"\\e[2Jx"', '"a\\u202eb"', '"a\\x9bb"', '"a\\nb"'])
def test_control_and_bidi_characters_in_values_are_refused(tmp_path, value):
    text = f"grid: {{models: [mnist_mlp]}}\nflags: {{run_label: {value}}}\n"
    with pytest.raises(errors.UsageError, match=r"line 2: .*U\+"):
        sweep_file.load(_file(tmp_path, text), "local")


def test_study_files_go_through_the_same_loader(tmp_path):
    from tpubench.core import errors as tpubench_errors
    from tpubench.study.spec import spec

    path = tmp_path / "mine.yaml"
    path.write_text("title: a\ntitle: b\nparts: []\n")
    with pytest.raises(tpubench_errors.UsageError, match=r"'title'.*line 1.*line 2"):
        spec.load(str(path))
    path.write_text("base: &b {model: mnist_mlp}\nparts: [*b]\n")
    with pytest.raises(tpubench_errors.UsageError, match="anchors and aliases"):
        spec.load(str(path))
