"""Whether layers and optimizers built now run through tpubench's CPU kernels.

One switch for all of them (model/cpu_ops.py has the kernels): the run
chooses (run/conv_grads.py: a CPU, no XLA, no parameter servers, a kernel
library that builds), and each layer or optimizer keeps what it was built
with.  Built under `use(True)`: channels-last batch norms (with their
residual addition and ReLU), the bias and ReLU gradients of bf16
`layers.Conv2D` and `layers.Dense`, and fp32 Adadelta and RMSprop (without
momentum) updates, which may also keep those layers' bf16 weight copies
(weight_copy.py).  Without it they are TensorFlow's kernels; the weights are the same.
"""

from __future__ import annotations

import contextlib

_STATE = {"own": False}


@contextlib.contextmanager
def use(own: bool):
    """Builds what is made inside with tpubench's CPU kernels (OWN) or TensorFlow's."""
    before = _STATE["own"]
    _STATE["own"] = bool(own)
    try:
        yield
    finally:
        _STATE["own"] = before


def chosen() -> bool:
    """True inside `use(True)`: what a layer or optimizer records when it is made."""
    return _STATE["own"]
