"""A study's cells: every model x data x setup of every part, and what each needs.

A cell is one `tpubench train`, `tpubench infer` or `tpubench data bench`
process (study/spec/data_bench.py).  Its id is a
stable hash of the study, the part, its settings and the scale; it is passed
as `--run_label`, so a finished record carrying it marks the cell done (the
resume rule of tpubench-launch's sweeps, with the study's own ids).
"""

from __future__ import annotations

import dataclasses
import shlex

from tpubench.children import command, labels
from tpubench.core import host_procs
from tpubench.hardware import amx as amx_lib
from tpubench.study.spec import data_bench, spec, validate
from tpubench.study.spec import parts as parts_lib


@dataclasses.dataclass(frozen=True)
class Host:
    """What this machine offers a study: cores, GPUs, a TPU, a gs:// copy of the data.

    MACHINE names a catalog machine planned for instead of this host (`study run
    --dry-run --plan_for=MACHINE`, or the machine a remote cell rents)."""

    cores: tuple[int, ...]
    gpus: int
    gpu_name: str
    tpu: bool
    gcs_data: str | None = None
    machine: str | None = None
    amx: str | None = None  # hardware.amx.state() here; None for a planned or rented machine
    bf16_path: str | None = None  # hardware.amx.bf16_path() here; None as `amx`

    @property
    def name(self) -> str:
        return self.machine or "this host"

    def describe(self) -> str:
        parts = [f"{len(self.cores)} CPU core(s)"]
        parts.append(f"{self.gpus} GPU(s) ({self.gpu_name})" if self.gpus else "no GPU")
        parts.append("a TPU" if self.tpu else "no TPU")
        return ", ".join(parts)


@dataclasses.dataclass(frozen=True)
class Cell:
    id: str
    study: str
    part: parts_lib.Part
    model: parts_lib.ModelItem
    data: str
    setup: parts_lib.Setup
    scale: str

    def describe(self) -> str:
        return f"{self.part.name}: {self.model.model} · {self.data} · {self.setup.label}"

    def device(self, host: Host) -> str:
        if self.setup.device == "auto":
            return "gpu" if host.gpus else "cpu"
        return self.setup.device

    def needs(self, host: Host) -> str | None:
        """None when this host can run the cell, else what it needs."""
        s, device = self.setup, self.device(host)
        if device == "gpu" and host.gpus < s.devices:
            return f"needs {s.devices} GPU(s); {host.name} has {host.gpus}"
        if device == "tpu" and not host.tpu:
            return "needs a TPU VM (run the study there)"
        if s.vcpus and s.vcpus > len(host.cores):
            return f"needs {s.vcpus} vCPUs; {host.name} has {len(host.cores)}"
        if s.cpu and device == "cpu" and host.amx is not None:
            # Priced as a machine whose bf16 runs on that path: measured on another
            # path it would price the wrong CPU's speed.
            path = host.bf16_path or amx_lib.bf16_path({"amx": host.amx})
            if s.cpu == amx_lib.AMX_PATH and path != s.cpu:
                return f"needs a CPU with AMX this process may use; {host.name}'s AMX: {host.amx}"
            if path != s.cpu:
                return (
                    f"needs a CPU whose bf16 runs on {s.cpu} (AVX-512 BF16 without AMX: "
                    f"AMD EPYC Zen 4 or 5); {host.name}'s bf16 path: {path}"
                )
        # TF2's asynchronous parameter server on a GPU takes one beside the workers';
        # the synchronous one (central_storage) keeps the variables on the first of them.
        ps_gpu = self.cluster() and device == "gpu" and s.variables == "gpu"
        if ps_gpu and host.gpus < s.devices + 1:
            return (
                f"needs {s.devices + 1} GPU(s) (one for the parameter server); "
                f"{host.name} has {host.gpus}"
            )
        if self.cluster():  # its workers, a parameter server and a chief, at once
            cores = len(self.pinned(host) or host.cores) or None
            room = host_procs.this_host(cores) if host.machine is None else None
            room = room or host_procs.fit(cores or 1, None, host.name)
            if s.devices + 2 > room.most:
                return (
                    f"needs {s.devices + 2} processes at once ({s.devices} workers, a parameter "
                    f"server, a chief); {host.name} holds {room.most} ({room.why()})"
                )
        # A part that compares local disk with gs:// runs neither alone.
        if "jpeg_gs" in self.part.data and not host.gcs_data:
            return "needs the photos on gs:// (--gcs_data=gs://BUCKET/PATH)"
        return None

    def cluster(self) -> bool:
        """TF2's asynchronous parameter servers: one local cluster (tpubench-launch local-cluster).

        The seeds' synchronous form (strategy central_storage) is one process.
        """
        return self.setup.strategy == "parameter_server"

    def batch(self) -> int | None:
        """The global batch: the one named, else the batch per device x the setup's devices."""
        per = self.per_device()
        if self.model.batch_size or self.setup.batch_size:
            return self.model.batch_size or self.setup.batch_size
        return per * self.setup.devices if per else None

    def per_device(self) -> int | None:
        """The batch per device (tf_cnn_benchmarks' --batch_size) when no global one is named."""
        if self.model.batch_size or self.setup.batch_size:
            return None
        return self.model.batch_per_device or self.setup.batch_per_device

    def optimizer(self) -> str | None:
        """--optimizer: the model item's, else the setup's, else the part's (None: the model's)."""
        return self.model.optimizer or self.setup.optimizer or self.part.optimizer

    def flags(self, host: Host, results_dir: str, jpeg_dir: str | None) -> dict:
        """The tpubench flags of this cell, in order: machine, model, data, scale."""
        s, device, cmd = self.setup, self.device(host), self.part.command
        if cmd == data_bench.COMMAND:  # the input pipeline alone: no device, no threads
            data = host.gcs_data if self.data == "jpeg_gs" else jpeg_dir
            return data_bench.flags(self, results_dir, data)
        out: dict = {"model": self.model.model, "accelerator": device}
        if self.cluster():  # one device per worker task: the launcher hands them out
            out["num_gpus" if device == "gpu" else "num_cpu_devices"] = 1
        elif device == "gpu":
            out["num_gpus"] = s.devices
        elif device == "tpu":
            out["tpu"] = "local"
        elif s.devices > 1:
            out["num_cpu_devices"] = s.devices
        if s.vcpus:
            out["num_intra_threads"] = out["num_inter_threads"] = s.vcpus
        if s.memory:  # a smaller host's memory, emulated (RLIMIT_DATA)
            out["memory_limit"] = s.memory
        if s.read_mb_per_s:  # a slower disk, emulated where the input pipeline reads
            out["read_mb_per_s"] = s.read_mb_per_s
        for key in ("machine", "pricing", "strategy", "all_reduce"):
            # A TPU setup's machine is the slice to plan and rent (a rented one's name the
            # launcher passes): a run prices the TPU it runs on, so that its figures per chip
            # count the chips that ran, not the named slice's.
            if getattr(s, key) and not (key == "machine" and device == "tpu"):
                out[key] = getattr(s, key)
        if s.strategy == "central_storage" and s.variables:  # one process, this device's
            out["parameter_device"] = s.variables
        precision = self.model.precision or s.precision
        if precision:
            out["precision"] = precision
        if self.per_device():  # exact per device whatever the strategy makes of the devices
            out["per_replica_batch_size"] = self.per_device()
        elif self.batch():
            out["batch_size"] = self.batch()
        if self.optimizer() and cmd == "train":
            out["optimizer"] = self.optimizer()
        own = s.params_for(self.model.model)
        if own:  # this model's hyperparameters on this setup (cudnn=false: no cuDNN kernel)
            out["params"] = [f"{k}={validate.shown(v)}" for k, v in own.items()]
        if self.data == "synthetic":
            out["use_synthetic_data"] = True
        elif self.data == "real" and cmd == "infer":
            out["use_synthetic_data"] = False
        elif self.data == "jpeg":
            out["data_dir"] = jpeg_dir
        elif self.data == "jpeg_gs":
            out["data_dir"] = host.gcs_data
        given = {
            **self.part.flags,
            **{
                k: v for k, v in self.part.scale[self.scale].items() if k not in validate.SCALE_KEYS
            },
        }
        if given.keys() & set(BATCH_FLAGS):  # a scale's own batch replaces the cell's
            for key in BATCH_FLAGS:
                out.pop(key, None)
        if "params" in out and given.get("params"):  # the part's first, then the setup's
            out["params"] = [*str(given.pop("params")).split(","), *out["params"]]
        out.update(given)
        out["results_dir"] = results_dir
        if cmd == "train":  # infer's --model_dir names weights to read, not a place to write
            out["model_dir"] = labels.model_dir(results_dir, self.id)
        out["run_label"] = self.id
        return out

    def argv(self, host: Host, results_dir: str, jpeg_dir: str | None) -> list[str]:
        return command.python_argv(*self._words(host, results_dir, jpeg_dir))

    def _words(self, host: Host, results_dir: str, jpeg_dir: str | None) -> list[str]:
        """The module and its arguments: tpubench, or the launcher for a cluster."""
        flags = command.flags_argv(self.flags(host, results_dir, jpeg_dir))
        if not self.cluster():
            return ["tpubench", *data_bench.WORDS[self.part.command], *flags]
        shape = self.cluster_shape(host)
        launch = [f"--{k.replace('_', '-')}={v}" for k, v in shape.items()]
        return ["tpubench_launch.main", "local-cluster", *launch, "--", *flags]

    def cluster_shape(self, host: Host) -> dict:
        """The cluster this cell runs as, on one machine: its workers and parameter server,
        one GPU per worker and the server on the variables' device (local-cluster's flags
        here; the settings of a `runs:` entry where a launcher executor rents the machine)."""
        out = {"workers": self.setup.devices, "ps": 1}
        if self.device(host) == "gpu":
            out.update(gpus_per_worker=1, ps_device=self.setup.variables or "cpu")
        return out

    def pinned(self, host: Host) -> tuple[int, ...] | None:
        """The cores to pin the process to (an N-vCPU machine), or None."""
        if not self.setup.vcpus or self.device(host) == "tpu":
            return None
        return host.cores[: self.setup.vcpus]

    def shell(self, host: Host, results_dir: str, jpeg_dir: str | None) -> str:
        """The command line as a user would type it (taskset shows the pinning)."""

        module, *args = self._words(host, results_dir, jpeg_dir)
        argv = ["tpubench-launch" if module.startswith("tpubench_launch") else "tpubench", *args]
        cores = self.pinned(host)
        if cores and len(cores) == self.setup.vcpus:
            argv = [*command.taskset(cores), *argv]
        return shlex.join(argv)


# The train flags that size a batch: a part's or scale's own replaces the cell's.
BATCH_FLAGS = ("batch_size", "per_replica_batch_size")
# Keys added since ids began: they count in an id only when set, so the cells
# recorded before them keep their ids (and their records).
_LATER_KEYS = ("variables", "memory", "read_mb_per_s", "optimizer")


def _settings(item) -> dict:
    """A setup or model item as its cell ids hash it (keys added later only when set)."""
    out = dataclasses.asdict(item)
    out.pop("cpu", None)  # where a setup may run, not what it runs: never in the id
    out.pop("params", None)  # a cell hashes its own model's (expand), not every model's
    for key in _LATER_KEYS:
        if out.get(key) is None:
            out.pop(key, None)
    return out


def expand(study: spec.Study, scale: str) -> list[Cell]:
    """Every cell of STUDY at SCALE, part by part, in the file's order."""
    cells = []
    for part in study.parts:
        for setup in part.setups:
            only = part.scale[scale].get("models")
            if part.scale[scale].get("setups") and setup.label not in part.scale[scale]["setups"]:
                continue
            for item in part.models:
                if setup.models and item.model not in setup.models:
                    continue
                if only and item.model not in only:
                    continue
                for data in part.data:
                    settings = {
                        "part": part.name,
                        "model": _settings(item),
                        "data": data,
                        "setup": _settings(setup),
                        "flags": part.flags,
                        "scale": scale,
                        # What a cell runs, not which cells a scale picks nor the
                        # preview's estimate: editing those keeps recorded cells done.
                        "scale_flags": {
                            k: v
                            for k, v in part.scale[scale].items()
                            if k not in ("models", "setups", "seconds")
                        },
                    }
                    if part.optimizer:  # added later: only when set, as _settings
                        settings["optimizer"] = part.optimizer
                    own = setup.params_for(item.model)
                    if own:  # this model's hyperparameters on the setup (only when set)
                        settings["params"] = own
                    ident = labels.stable_id(study.name, settings)
                    cells.append(Cell(ident, study.name, part, item, data, setup, scale))
    return cells
