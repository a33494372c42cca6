"""Flag groups that several subcommands share: model, data, hardware, pricing.

Each subcommand module (cli/<name>.py) defines its own flags in `define()`,
calling these for the groups it shares with others.  Names follow
tf_cnn_benchmarks and TPUEstimator where users know them; docs/cli.md lists
every flag.
"""

from __future__ import annotations

from absl import flags

from tpubench.core import basis, bounds, precision, vocab

MAX_SEED = bounds.FLAGS["seed"][1]  # 2**31 - 1: what every TensorFlow and Keras seed accepts

# Logical CPU devices each get threads and a replica of the model; 100,000 of
# them never finish being created.  256 is past any real use of them.
MAX_CPU_DEVICES = bounds.FLAGS["num_cpu_devices"][1]


def define_common():
    flags.DEFINE_bool("verbose", False, "Show tracebacks and TensorFlow's own logging.")


def define_model_flags():
    """What to run and how: shared by train and infer."""
    f = flags
    f.DEFINE_string("model", "mnist_mlp", "Registered model name (`tpubench models` lists them).")
    define_model_module()
    f.DEFINE_list("params", [], "Model hyperparameter overrides, k=v,k=v (tuples as a:b:c).")
    f.DEFINE_bool("tiny", False, "Use the model's tiny variant (for tests and smoke runs).")
    f.DEFINE_enum(
        "precision",
        precision.DEFAULT.value,
        [p.value for p in precision.ALL],
        "Numeric precision (Keras mixed precision; fp16 adds loss scaling in training).",
    )
    f.DEFINE_bool(
        "xla",
        False,
        "Compile each replica's step with XLA (forward and backward pass in train, forward in "
        "infer). Unset, a bf16 training run on a GPU compiles with XLA (TensorFlow fuses batch "
        "norm, ReLU and residual additions for fp16 only: docs/gpu.md); --noxla turns it off.",
    )
    f.DEFINE_enum(
        "data_format",
        "auto",
        list(vocab.DATA_FORMATS),
        "Image layout inside convolutional models: auto is channels_first (NCHW) for fp32 on a "
        "GPU, channels_last (NHWC) otherwise (fp16/bf16 tensor cores, CPUs, TPUs); models that "
        "are channels-last only take auto or channels_last; on a CPU whose TensorFlow runs NHWC "
        "only (oneDNN off: CPUs without AVX-512 VNNI/BF16 or AMX) channels_first is refused.",
    )
    f.DEFINE_integer(
        "seed",
        42,
        "Seed for initialisation, dropout, shuffling and synthetic data.",
        lower_bound=0,
        upper_bound=MAX_SEED,
    )


def define_eval_steps():
    flags.DEFINE_integer(
        "eval_steps", None, "Cap on eval batches (default: the whole eval split).", lower_bound=1
    )


def define_results_dir():
    flags.DEFINE_string("results_dir", "runs", "Where run records go (local or gs://).")


def define_log_every_secs():
    flags.DEFINE_float(
        "log_every_secs", 10.0, "Progress line period when not on a terminal.", lower_bound=0.0
    )


def define_data_flags(synthetic_default: bool):
    f = flags
    f.DEFINE_string(
        "dataset",
        None,
        "Dataset name; default: the model's embedded dataset "
        "(digits) when it fits, else --data_dir's.",
    )
    f.DEFINE_string("data_dir", None, "Prepared TFRecords + manifest.json (local or gs://).")
    f.DEFINE_bool("use_synthetic_data", synthetic_default, "Synthetic batches kept on the device.")
    f.DEFINE_bool("deterministic_input", False, "Deterministic input order (slower).")
    f.DEFINE_bool("cache_input", False, "Cache decoded examples in memory.")
    define_read_rate()


def define_read_rate():
    flags.DEFINE_float(
        "read_mb_per_s",
        None,
        "Read records no faster than a disk of this many MB/s would deliver them "
        "(an emulated slower disk, applied in the input pipeline).",
    )


def define_hardware_flags():
    f = flags
    f.DEFINE_enum("accelerator", "auto", list(vocab.ACCELERATORS), "Device kind.")
    f.DEFINE_enum(
        "strategy",
        "auto",
        list(vocab.STRATEGIES),
        "tf.distribute strategy. central_storage: synchronous, one process, the variables on "
        "--parameter_device (tf_cnn_benchmarks' --variable_update=parameter_server); "
        "parameter_server: TF2's asynchronous cluster of worker and ps tasks (TF_CONFIG).",
    )
    f.DEFINE_enum(
        "parameter_device",
        None,
        list(vocab.PARAMETER_DEVICES),
        "--strategy=central_storage: where the variables live and each gradient is summed and "
        "applied: the host CPU (cpu, the default), or spread over the training GPUs, each "
        "variable on the GPU holding the fewest elements so far (gpu; GPUs only).",
    )
    f.DEFINE_enum(
        "all_reduce",
        "auto",
        list(vocab.ALL_REDUCE),
        "Cross-replica reduction (nccl/hierarchical_copy/reduce_to_one (on GPU 0)/"
        "reduce_to_cpu (on the host CPU) on one host; ring/nccl for multi_worker).",
    )
    f.DEFINE_integer("num_gpus", None, "GPUs to use (default: all visible).", lower_bound=1)
    f.DEFINE_string("tpu", None, "TPU name, grpc://host:port, or 'local' on a TPU VM.")
    f.DEFINE_integer(
        "num_cpu_devices",
        1,
        f"Split the CPU into N logical devices (N replicas), at most {MAX_CPU_DEVICES}.",
        lower_bound=1,
        upper_bound=MAX_CPU_DEVICES,
    )
    f.DEFINE_integer(
        "num_intra_threads", 0, "Intra-op thread pool size (0: TF default).", lower_bound=0
    )
    f.DEFINE_integer(
        "num_inter_threads", 0, "Inter-op thread pool size (0: TF default).", lower_bound=0
    )
    f.DEFINE_enum(
        "cpu_kernels",
        "auto",
        ["auto", "onednn", "zendnn"],
        "CPU kernels TensorFlow runs: auto (TensorFlow's default for this CPU), onednn "
        "(TensorFlow's oneDNN kernels), zendnn (AMD's ZenDNN plug-in, zentf: `make zendnn`). "
        "Recorded in the record's software section.",
    )
    f.DEFINE_string(
        "memory_limit",
        None,
        "Cap the run's private writable memory (RLIMIT_DATA), e.g. 1GiB or 512MiB: "
        "an emulated smaller host. A run that reaches it fails naming the cap.",
    )


def define_basis():
    """--pricing: the one price basis of every dollar figure a command prints or records."""
    flags.DEFINE_enum(
        "pricing",
        basis.DEFAULT,
        list(basis.CHOSEN),
        "Price basis of every dollar figure: on_demand, or spot (preemptible).",
    )


def define_pricing(with_override: bool = True):
    f = flags
    f.DEFINE_list(
        "machine",
        [],
        "Priced machine(s): parts joined by '+', e.g. "
        "gcp:n1-standard-8+4xgcp:v100; several separated by commas.  It must carry the "
        "accelerators the run used (a CPU run: a CPU-only VM).",
    )
    define_basis()
    if with_override:
        f.DEFINE_list(
            "price_as",
            [],
            "What-if: also price the run as these machine(s), marked 'not measured there' "
            "in every table and in advise.",
        )
        f.DEFINE_float("price_per_hour", None, "Override: USD per hour for this run (strongest).")
        f.DEFINE_float(
            "peak_flops",
            None,
            "Override: the peak FLOP/s MFU is measured against (whole machine), e.g. 1.2e11.",
            lower_bound=1.0,
        )
    f.DEFINE_string("price_catalog", None, "A price catalog CSV replacing the shipped one.")


def define_model_module():
    flags.DEFINE_multi_string(
        "model_module",
        [],
        "Import a module (dotted name or .py file) that registers models of your own; repeatable.",
    )
