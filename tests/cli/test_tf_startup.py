"""TensorFlow's start-up in tpubench: Keras' unused optional imports are skipped, not broken."""

import subprocess
import sys

SCRIPT = """
import sys
from tpubench.cli import tflog

tflog.import_tensorflow()
import keras
skipped = [m for m in tflog.KERAS_EXTRAS if m in sys.modules]
from sklearn.datasets import load_digits  # the embedded digits still load
import matplotlib.pyplot  # and charts still draw
loaded = sorted(m for m in tflog.KERAS_EXTRAS if sys.modules.get(m))
print(len(load_digits().target), skipped, loaded)
"""


def test_keras_loads_without_scikit_learn_and_pyplot_which_import_normally_after():
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[-2] == "1797 [] ['matplotlib.pyplot', 'sklearn']"
