"""`--optimizer`: the model's own optimizer, or another at the model's learning rate.

tf_cnn_benchmarks trains with plain SGD unless told otherwise; tpubench's
ImageNet models use momentum, others RMSprop, Adam or Adadelta.  A seed's
figures are reproduced with the seed's optimizer: the update's arithmetic
and memory (momentum and Adam keep slot variables) change the step time.

The replacement keeps what the model chose around the update: its learning
rate (a number, or a schedule object with the same steps), its weight decay
and its gradient clipping.  Weight decay written as a regularizer (the
ImageNet models' L2) stays in the loss.  The hyperparameters are
tf_cnn_benchmarks' defaults (--momentum, --rmsprop_*, --adam_*).
"""

from __future__ import annotations

import keras

from tpubench.core import vocab
from tpubench.model import optim

OWN = "model"
MOMENTUM = 0.9
RMSPROP = {"rho": 0.9, "momentum": 0.9, "epsilon": 1.0}
ADAM = {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-8}
_KEPT = ("weight_decay", "clipnorm", "clipvalue", "global_clipnorm")


def choose(name: str, own):
    """The optimizer NAME (vocab.OPTIMIZERS) in place of OWN, the model's built one.

    SGD and momentum run through `optim.MomentumSGD` (one fused kernel per
    variable with momentum; Keras's own arithmetic without), RMSprop and Adam
    through `optim.RMSprop` and `optim.Adam` (one fused kernel each), so the
    fp16 loss-scale wrapper the runner adds composes with every choice.

    Raises:
      ValueError: NAME is not one of vocab.OPTIMIZERS.
    """
    if name == OWN:
        return own
    kept = {"learning_rate": learning_rate(own)}
    kept.update({k: getattr(own, k) for k in _KEPT if getattr(own, k, None) is not None})
    if name == "sgd":
        return optim.MomentumSGD(momentum=0.0, **kept)
    if name == "momentum":
        return optim.MomentumSGD(momentum=MOMENTUM, **kept)
    if name == "rmsprop":
        return optim.RMSprop(**RMSPROP, **kept)
    if name == "adam":
        return optim.Adam(**ADAM, **kept)
    raise ValueError(f"optimizer {name!r}; accepted: {', '.join(vocab.OPTIMIZERS)}")


def learning_rate(own):
    """OWN's learning rate as its constructor took it: the schedule object, or a number."""
    rate = getattr(own, "_learning_rate", None)
    if isinstance(rate, keras.optimizers.schedules.LearningRateSchedule):
        return rate
    return float(keras.ops.convert_to_numpy(own.learning_rate))  # a (mirrored) variable


def describe(name: str, own) -> str:
    """What ran, for the record: 'sgd' for a choice, 'model (SGD)' for the model's own."""
    if name != OWN:
        return name
    inner = getattr(own, "inner_optimizer", own)
    return f"{OWN} ({type(inner).__name__})"
