"""Files TensorFlow reads itself refuse a FIFO, a device or a directory at once (#58, class C).

TensorFlow's TFRecord and checkpoint readers open whatever a path names: a
FIFO in place of a checkpoint's data file hung `train --model_dir` (resume)
and `infer --checkpoint`, a FIFO as the `checkpoint` state file hung `infer
--model_dir`, a FIFO shard hung `train --data_dir`; /dev/zero or a directory
in a checkpoint's place was taken for damage and silently skipped.  Each is
checked a regular file first (storage/any_path.check_regular) and refused
in one line naming the file.  A shard or a checkpoint may be of any size,
so no huge case here.  Each command runs with a timeout: a hang fails.
"""

from __future__ import annotations

import shutil

import pytest
from planted import KINDS, one_line, replace, tpubench

TINY = ["--tiny", "--use_synthetic_data", "--results_dir=runs"]
DATA = "ckpt-2.data-00000-of-00001"
CKPT_WHAT = "accepted: a regular file (a checkpoint file TensorFlow writes"
SHARD_WHAT = "accepted: a regular file (a TFRecord shard of `tpubench data prepare`"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A model_dir holding ckpt-1 and ckpt-2 of mnist_mlp's tiny variant."""
    where = tmp_path_factory.mktemp("trained")
    args = ["train", *TINY, "--train_steps=2", "--checkpoint_every_steps=1", "--model_dir=m"]
    proc = tpubench(where, *args, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return where / "m"


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """The embedded digits dataset, prepared."""
    where = tmp_path_factory.mktemp("digits")
    proc = tpubench(where, "data", "prepare", "--dataset=digits", "--output=d", timeout=300)
    assert proc.returncode == 0, proc.stderr
    return where / "d"


def _copy(src, tmp_path, name):
    shutil.copytree(src, tmp_path / name)
    return tmp_path / name


@pytest.mark.parametrize("kind", ["fifo", "dev_zero_link", "directory"])
def test_train_resume_refuses_a_checkpoint_data_file_that_is_not_a_regular_file(
    tmp_path, trained, kind
):
    m = _copy(trained, tmp_path, "m")
    replace(m / "checkpoints" / DATA, kind)
    proc = tpubench(tmp_path, "train", *TINY, "--train_steps=3", "--model_dir=m")
    line = one_line(proc)
    assert f"m/checkpoints/{DATA} {KINDS[kind][1]}; {CKPT_WHAT}" in line
    assert not (m / "checkpoints" / "ckpt-3.index").exists()  # nothing trained past it


def test_train_resume_refuses_a_checkpoint_index_that_is_a_fifo(tmp_path, trained):
    m = _copy(trained, tmp_path, "m")
    replace(m / "checkpoints" / "ckpt-2.index", "fifo")
    line = one_line(tpubench(tmp_path, "train", *TINY, "--train_steps=3", "--model_dir=m"))
    assert f"m/checkpoints/ckpt-2.index {KINDS['fifo'][1]}; {CKPT_WHAT}" in line


def test_infer_refuses_a_checkpoint_whose_data_file_is_a_fifo(tmp_path, trained):
    m = _copy(trained, tmp_path, "m")
    replace(m / "checkpoints" / DATA, "fifo")
    line = one_line(tpubench(tmp_path, "infer", *TINY, "--checkpoint=m/checkpoints/ckpt-2"))
    assert f"m/checkpoints/{DATA} {KINDS['fifo'][1]}; {CKPT_WHAT}" in line


def test_infer_refuses_a_model_dirs_checkpoint_state_that_is_a_fifo(tmp_path, trained):
    m = _copy(trained, tmp_path, "m")
    replace(m / "checkpoints" / "checkpoint", "fifo")
    line = one_line(tpubench(tmp_path, "infer", *TINY, "--model_dir=m"))
    assert f"m/checkpoints/checkpoint {KINDS['fifo'][1]}; accepted: a regular file" in line


@pytest.mark.parametrize("kind", ["fifo", "dev_zero_link"])
def test_train_refuses_a_tfrecord_shard_that_is_not_a_regular_file(tmp_path, digits, kind):
    d = _copy(digits, tmp_path, "d")
    replace(d / "train-00002-of-00004.tfrecord", kind)
    args = ["train", "--tiny", "--train_steps=2", "--data_dir=d", "--results_dir=runs"]
    line = one_line(tpubench(tmp_path, *args, "--model_dir=m"))
    assert f"d/train-00002-of-00004.tfrecord {KINDS[kind][1]}; {SHARD_WHAT}" in line


@pytest.mark.parametrize("kind", ["directory", "dev_zero_link"])
def test_data_check_refuses_a_shard_that_is_not_a_regular_file(tmp_path, digits, kind):
    d = _copy(digits, tmp_path, "d")
    replace(d / "test-00000-of-00001.tfrecord", kind)
    line = one_line(tpubench(tmp_path, "data", "check", "--data_dir=d"))
    assert f"d/test-00000-of-00001.tfrecord {KINDS[kind][1]}; {SHARD_WHAT}" in line


@pytest.mark.parametrize("kind", ["dev_zero_link", "huge"])  # a FIFO: tests/core/test_safe_files.py
def test_data_check_refuses_a_manifest_that_is_not_a_regular_file_of_bounded_size(
    tmp_path, digits, kind
):
    d = _copy(digits, tmp_path, "d")
    replace(d / "manifest.json", kind)
    line = one_line(tpubench(tmp_path, "data", "check", "--data_dir=d"))
    assert f"d/manifest.json {KINDS[kind][1]}; accepted: a regular file of at most" in line
