"""core/safe_files.py: a path named by a file or a flag is a regular file of bounded size.

Each refusal must come at once (a FIFO opened for reading waits for a writer,
/dev/zero never ends): every case runs under an alarm that fails the test
instead of hanging the suite.
"""

import os

import pytest
from conftest import within

from tpubench.core import errors, safe_files, safe_yaml
from tpubench.cost import catalog


def _fifo(tmp_path):
    path = tmp_path / "pipe.csv"
    os.mkfifo(path)
    return str(path)


def _huge(tmp_path):
    path = tmp_path / "huge.csv"
    with open(path, "wb") as f:
        f.truncate(1 << 30)  # sparse: a gigabyte on no disk
    return str(path)


CASES = {
    "device": (lambda tmp: "/dev/zero", "is a device, not a regular file"),
    "fifo": (_fifo, "is a FIFO (named pipe), not a regular file"),
    "directory": (lambda tmp: str(tmp), "is a directory, not a regular file"),
    "huge": (_huge, "holds 1,073,741,824 bytes"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_device_fifo_directory_or_huge_file_is_refused_at_once_naming_key_and_path(
    tmp_path, case
):
    make, said = CASES[case]
    path = make(tmp_path)
    with within(5), pytest.raises(errors.UsageError) as e:
        safe_files.read_text(path, "flags.price_catalog", 1 << 20, "a price catalog CSV")
    line = str(e.value)
    assert "\n" not in line
    assert line.startswith(f"flags.price_catalog={path} ") and said in line
    want = "accepted: a regular file of at most 1,048,576 bytes (a price catalog CSV)"
    assert line.endswith(want)


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_price_catalog_and_yaml_readers_refuse_them_too(tmp_path, case):
    make, said = CASES[case]
    path = make(tmp_path)
    with within(5), pytest.raises(errors.PriceError, match="--price_catalog="):
        catalog.load(path)
    with within(5), pytest.raises(safe_yaml.Refused, match=path):
        safe_yaml.load(path)


def test_check_flags_checks_local_paths_and_leaves_gs_and_other_flags(tmp_path):
    good = tmp_path / "prices.csv"
    good.write_text("key\n")
    safe_files.check_flags({"price_catalog": str(good), "model": "x"}, "s.yaml: flags.")
    safe_files.check_flags({"price_catalog": "gs://b/prices.csv"}, "s.yaml: flags.")
    with within(5), pytest.raises(errors.UsageError, match=r"^s.yaml: flags.user_conf=.*FIFO"):
        safe_files.check_flags({"user_conf": _fifo(tmp_path)}, "s.yaml: flags.")


def test_a_missing_file_is_unreadable_with_the_systems_words(tmp_path):
    with pytest.raises(safe_files.Unreadable) as e:
        safe_files.read_bytes(str(tmp_path / "nope"), "k", 10, "x")
    assert "No such file" in str(e.value) and e.value.error.errno == 2


def test_a_data_dirs_manifest_that_is_a_fifo_is_refused_at_once(tmp_path):
    from tpubench.data import manifest

    os.mkfifo(tmp_path / manifest.MANIFEST)
    with within(60), pytest.raises(errors.UsageError, match="FIFO"):  # 60: TensorFlow loads
        manifest.read(str(tmp_path))
