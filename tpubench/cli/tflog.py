"""TensorFlow's C++ log lines stay off the console unless --verbose: the one way.

`TF_CPP_MIN_LOG_LEVEL=3` silences TensorFlow's own logger, but not every
C++ library in TensorFlow honours it: lines logged through absl before its
initialisation (`W0000 ... local_rendezvous.cc`, `E0000 ...
BaseCollectiveExecutor::StartAbort`) reach file descriptor 2 on some
machines and bury tpubench's one-line error.  `silence` therefore also
sends descriptor 2 through `grep -v` in a separate process that drops lines
in the glog/absl format and passes everything else (a crash message from
C++ or the interpreter still shows).  Python's own `sys.stderr` keeps the
original descriptor, so tpubench's lines are never delayed or filtered.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

# glog/absl prefixes: "W0000 00:00:1795392760.683214    8453 file.cc:412] ...",
# "2024-01-01 12:00:00.000000: W tensorflow/...", the absl start-up notice and
# the "\t [[{{node X}}]]" continuation of an op's status.
LOG_LINE = (
    r"^([IWE][0-9]{4} [0-9:.]+ +[0-9]+ [^ ]+:[0-9]+\]"
    r"|[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:.]+: [IWE] "
    r"|WARNING: All log messages before absl::InitializeLog"
    "|\t \\[\\[\\{\\{node )"
)


def silence(verbose: bool) -> None:
    """Keeps TensorFlow's C++ logging off stderr for the rest of the process (not if VERBOSE)."""
    if verbose:
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    grep = shutil.which("grep")
    if grep is None:
        return
    try:
        sys.stderr.flush()
        original = os.dup(2)
        read, write = os.pipe()
        # Its own session: a Ctrl-C meant for tpubench must not kill the filter
        # first.  It exits when the last writer (this process, its children) closes.
        subprocess.Popen(
            [grep, "--line-buffered", "-v", "-E", LOG_LINE],
            stdin=read,
            stdout=original,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        os.close(read)
        os.dup2(write, 2)
        os.close(write)
    except OSError:
        return  # no filter: the log level above still applies
    sys.stderr = open(  # noqa: SIM115 - lives as long as the process
        original, "w", buffering=1, encoding=sys.stderr.encoding, errors="backslashreplace"
    )


# Optional imports of Keras 3 that tpubench never uses: `import tensorflow`
# loads Keras eagerly, and Keras tries scikit-learn (for its scikit-learn
# wrappers), matplotlib.pyplot (for an image-gallery plot) and pandas (to
# slice DataFrames given to `fit`), each guarded by `except ImportError`.
# The first two were 1.4 s of a 5 s start-up on 2 cores; pandas, where it is
# installed (the launch extra's SkyPilot brings it), another 0.1-0.4 s.
KERAS_EXTRAS = ("sklearn", "matplotlib.pyplot", "pandas")


def import_tensorflow(before_first_op=None) -> None:
    """Imports TensorFlow, then runs BEFORE_FIRST_OP (thread pools, logical devices).

    The subcommands that load TensorFlow have had `silence` applied by
    main.py, so the import's C++ start-up lines are filtered like the rest.
    While TensorFlow (and Keras with it) loads, KERAS_EXTRAS not yet imported
    are hidden (a None in sys.modules makes `import` raise ImportError, which
    Keras catches); afterwards they import as usual (the embedded datasets
    use scikit-learn, charts matplotlib).  Keras' scikit-learn wrappers and
    gallery plot are then off in this process; tpubench uses neither.
    """
    hidden = [m for m in KERAS_EXTRAS if m not in sys.modules]
    for name in hidden:
        sys.modules[name] = None
    try:
        import tensorflow  # noqa: F401 - deferred: commands without TensorFlow start at once
    finally:
        for name in hidden:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]

    if before_first_op:
        before_first_op()
