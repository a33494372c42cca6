"""Child tpubench processes never import a folder named `tpubench` in the working directory."""

import subprocess
import sys

import pytest

from tpubench.children import command


@pytest.mark.parametrize("form", ["this interpreter", "python 3.10 bootstrap"])
def test_a_tpubench_folder_in_the_working_directory_is_not_imported(form, tmp_path):
    (tmp_path / "tpubench").mkdir()
    (tmp_path / "tpubench" / "__init__.py").write_text("raise SystemExit('the wrong tpubench')\n")
    if form == "this interpreter":
        argv = command.isolated_python("tpubench")
    else:  # what Python 3.10 (no -P) runs, checked on whichever Python runs the suite
        argv = [sys.executable, "-c", command.SAFE_PATH_310, "tpubench"]
    proc = subprocess.run(
        [*argv, "prices", "--machine=gcp:n1-standard-2"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "gcp:n1-standard-2" in proc.stdout and "wrong" not in proc.stderr
