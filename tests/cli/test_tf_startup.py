"""TensorFlow's start-up in tpubench: Keras' unused optional imports are skipped, not broken."""

import importlib.util
import subprocess
import sys

SCRIPT = """
import importlib.util
import sys
from tpubench.cli import tflog

tflog.import_tensorflow()
import keras
skipped = [m for m in tflog.KERAS_EXTRAS if m in sys.modules]
from sklearn.datasets import load_digits  # the embedded digits still load
import matplotlib.pyplot  # and charts still draw
if importlib.util.find_spec("pandas"):  # installed with the launch extra
    import pandas  # noqa: F401 - and what wants pandas still gets it
loaded = sorted(m for m in tflog.KERAS_EXTRAS if sys.modules.get(m))
print(len(load_digits().target), skipped, loaded)
"""


def test_keras_loads_without_scikit_learn_pyplot_and_pandas_which_import_normally_after():
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    want = ["matplotlib.pyplot", "pandas", "sklearn"]
    if not importlib.util.find_spec("pandas"):
        want.remove("pandas")
    assert out.stdout.split("\n")[-2] == f"1797 [] {want}"
