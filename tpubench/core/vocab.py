"""The enumerations a user types: one spelling each, for flags, records, study and sweep files.

Flag enums (`cli/flag_groups.py`), the study file's checks (`study/spec/spec.py`),
and error messages read these tuples; none spells the values again, the
launcher's sweep files (`launch/sweep/grid.py`) included.  The price basis
is a typed value of its own (core/basis.py), as is the precision (core/precision.py).
"""

from __future__ import annotations

# --accelerator: the device kind a run uses ("auto": TPU, then GPU, then CPU).
ACCELERATORS = ("auto", "cpu", "gpu", "tpu")
# --optimizer: the model's own, or one of these (tf_cnn_benchmarks trains with plain SGD;
# model/optimizer_choice.py gives each one's hyperparameters).
OPTIMIZERS = ("model", "sgd", "momentum", "rmsprop", "adam")
# --strategy: tf.distribute strategies ("auto": mirrored with several devices).
STRATEGIES = (
    "auto",
    "one_device",
    "mirrored",
    "central_storage",
    "multi_worker",
    "parameter_server",
    "tpu",
)
# Strategies whose run is a cluster: one process per task, TF_CONFIG each.
CLUSTER_STRATEGIES = ("multi_worker", "parameter_server")
# --all_reduce: how replicas sum gradients.  `ring` is multi_worker's only.
ALL_REDUCE = ("auto", "nccl", "hierarchical_copy", "reduce_to_one", "reduce_to_cpu", "ring")
# The all-reduce algorithms of a single-host mirrored strategy.
MIRRORED_ALL_REDUCE = ("auto", "nccl", "hierarchical_copy", "reduce_to_one", "reduce_to_cpu")
# --parameter_device: where central_storage keeps the variables (gpu: spread over the GPUs).
PARAMETER_DEVICES = ("cpu", "gpu")
# --data_format: how image tensors are laid out in a network that can choose.
DATA_FORMATS = ("auto", "channels_last", "channels_first")
# --pointwise_weight_grad: how 1x1 convolutions take their weight gradient (run/conv_grads.py).
POINTWISE_WEIGHT_GRADS = ("auto", "matmul", "convolution")
# --batch_norm_kernel: which kernel trains batch norms (run/conv_grads.py).
BATCH_NORM_KERNELS = ("auto", "tpubench", "tensorflow")
# --fold_batch_norm: inference folds batch norms into their convolutions (run/conv_grads.py).
FOLD_BATCH_NORMS = ("auto", "on", "off")
