"""A study file's values, checked: each key's value and the flags it passes (file_rules.py: the
whole file).

study/spec/spec.py reads a file's structure and calls these; every refusal is one
UsageError naming the key, the value and what is accepted.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import subprocess

from tpubench.core import bounds, errors, precision, vocab
from tpubench.hardware import memory_cap
from tpubench.model.model_api import RUNTIME_PARAMS
from tpubench.study.spec import data_bench

# The study owns these flags: they point each cell at its records and label.
OWNED = ("results_dir", "model_dir", "run_label", "data_dir", "use_synthetic_data", "machine")
# Not tpubench flags: how many photos the `jpeg` data holds at this scale, and
# the models this scale runs (default all: a smoke run keeps to one or two),
# the setups it runs (labels, default all), and the seconds one cell takes
# (for the cost preview).
SCALE_KEYS = ("jpeg_examples", "models", "setups", "seconds")
_INTS = ("devices", "vcpus", "batch_size", "batch_per_device")
STRATEGIES = tuple(s for s in vocab.STRATEGIES if s not in ("auto", "multi_worker"))
ALL_REDUCE = tuple(a for a in vocab.MIRRORED_ALL_REDUCE if a != "auto")
VARIABLES = ("cpu", "gpu")  # where a parameter-server setup keeps the variables
# A setup's `cpu:`: the bf16 path its CPU must have (hardware.amx.bf16_path): amx (Intel
# AMX this process may use) or avx512_bf16 (AVX-512 BF16 without AMX: AMD EPYC Zen 4/5).
CPU_FEATURES = ("amx", "avx512_bf16")
# A setup's `params:` become `--params=name=value,...`: a name as models spell theirs, and
# a value without the list's comma or the pair's `=` (a:b:c is a tuple).
_HYPERPARAMETER = re.compile(r"^[a-z][a-z0-9_]*$")
_WORD = re.compile(r"^[A-Za-z0-9_.:+-]+$")
# A Cloud TPU slice as the price catalog names it: gcp:tpu-v2-8, gcp:tpu-v5e-8@2018.
TPU_SLICE = re.compile(r"^[a-z0-9_-]+:tpu-v\d+[a-z]*-\d+(@[\d-]+)?$")


def known_flags() -> dict | None:
    """train, infer and data flag names, asked of tpubench (flags are defined once per process)."""
    from tpubench.children import command as child_command

    out = {}
    for command, sub in data_bench.SUBCOMMAND.items():
        done = subprocess.run(
            child_command.python_argv("tpubench.cli.flags", sub),
            capture_output=True,
            text=True,
            check=False,
            env=child_command.child_env(),
        )
        if done.returncode:
            return None
        out[command] = set(json.loads(done.stdout))
    return out


def values(doc: dict, where: str) -> None:
    """The keys a setup, a model or a part share: whole numbers, precision, optimizer."""
    for k in _INTS:
        v = doc.get(k)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
            raise errors.UsageError(f"{where}: {k}={v!r} must be a whole number >= 1")
    if doc.get("batch_size") and doc.get("batch_per_device"):
        raise errors.UsageError(f"{where}: give batch_size or batch_per_device, not both")
    if "precision" in doc:  # typed from here on
        doc["precision"] = precision.parse(doc["precision"], f"{where}: precision")
    if doc.get("optimizer", "model") not in vocab.OPTIMIZERS:
        raise errors.unknown(f"optimizer in {where}:", str(doc.get("optimizer")), vocab.OPTIMIZERS)
    for k in ("machine", "model"):
        if k in doc and (not isinstance(doc[k], str) or not doc[k].strip()):
            raise errors.UsageError(f"{where}: {k}={doc[k]!r} must be a non-empty string")


def setup(doc: dict, where: str) -> None:
    """A setup's values: its device, strategy, variables, memory and disk (parts.py parses its
    pricing)."""
    values(doc, where)
    device = doc.get("device", "cpu")
    for key, default, accepted in (
        ("device", "cpu", vocab.ACCELERATORS),
        ("strategy", "one_device", STRATEGIES),
        ("all_reduce", "nccl", ALL_REDUCE),
    ):
        if doc.get(key, default) not in accepted:
            raise errors.unknown(f"{key} in {where}:", str(doc.get(key)), accepted)
    if doc.get("variables") is not None:
        if doc["variables"] not in VARIABLES:
            raise errors.unknown(f"variables in {where}:", str(doc["variables"]), VARIABLES)
        if doc.get("strategy") not in ("central_storage", "parameter_server"):
            raise errors.UsageError(
                f"{where}: variables={doc['variables']} is where parameter servers keep them; "
                "it needs strategy: central_storage or parameter_server"
            )
        if doc["variables"] == "gpu" and device != "gpu":
            raise errors.UsageError(f"{where}: variables=gpu needs device: gpu")
    if doc.get("cpu") is not None and doc["cpu"] not in CPU_FEATURES:
        raise errors.unknown(f"cpu in {where}:", str(doc["cpu"]), CPU_FEATURES)
    if doc.get("vcpus") and device == "tpu":
        raise errors.UsageError(f"{where}: vcpus pins host threads; a TPU VM's host is its own")
    machine = doc.get("machine")
    if isinstance(machine, str) and (device == "tpu") != bool(TPU_SLICE.match(machine.strip())):
        raise errors.UsageError(
            f"{where}: machine={machine} is a TPU slice; it needs device: tpu"
            if device != "tpu"
            else f"{where}: machine={machine} is not a TPU slice; a tpu setup names one such "
            "as gcp:tpu-v2-8 or gcp:tpu-v5e-8"
        )
    if doc.get("memory") is not None:
        memory_cap.parse(doc["memory"], f"{where}: memory")
    rate = doc.get("read_mb_per_s")
    if rate is not None:
        low, high, what = bounds.FLAGS["read_mb_per_s"]
        if not isinstance(rate, (int, float)) or isinstance(rate, bool) or not low <= rate <= high:
            raise errors.UsageError(
                f"{where}: read_mb_per_s={rate!r} must be a number of {what} from {low:g} "
                f"to {high:g}"
            )


def params(doc, where: str, models: list[str]) -> tuple:
    """A setup's `params:`, {model: {hyperparameter: value}}, as Setup.params holds it.

    Each model must be one of MODELS (the setup's, else its part's); each value true/false,
    a number or a word.  A key the run sets itself (seed, batch sizes) is refused, naming
    what sets it.  Whether the model has the hyperparameter is the model's
    to say: `tpubench train --params` refuses a name it lacks, in one line.
    """
    if doc is None:
        return ()
    if not isinstance(doc, dict) or not doc:
        raise errors.UsageError(
            f"{where} must map model names to their hyperparameters, e.g. "
            "params: {imdb_bilstm: {cudnn: false}}"
        )
    out = []
    for model, values in doc.items():
        if model not in models:
            raise errors.unknown(f"model in {where}:", str(model), models)
        if not isinstance(values, dict) or not values:
            raise errors.UsageError(
                f"{where}.{model} must map hyperparameters to values, e.g. {{cudnn: false}}"
            )
        pairs = []
        for key, value in values.items():
            at = f"{where}.{model}.{key}"
            if not isinstance(key, str) or not _HYPERPARAMETER.match(key):
                raise errors.UsageError(
                    f"{where}.{model}: {key!r} is not a hyperparameter name (lower case "
                    "letters, digits and _, e.g. cudnn, lstm_units)"
                )
            if key in RUNTIME_PARAMS:  # as `tpubench train --params` refuses it
                raise errors.UsageError(
                    f"{at}: {key} is not a hyperparameter: {RUNTIME_PARAMS[key].format(value)}"
                )
            word = isinstance(value, str) and _WORD.match(value)
            number = isinstance(value, (int, float)) and math.isfinite(value)
            if not (word or number):  # bool is an int: true/false pass here
                raise errors.UsageError(
                    f"{at}={value!r} must be true/false, a number or a word (no spaces, "
                    "commas or =)"
                )
            pairs.append((key, value))
        out.append((str(model), tuple(pairs)))
    return tuple(out)


def shown(value) -> str:
    """A hyperparameter's value as `--params` spells it: true/false, numbers, words."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def flags(doc: dict, where: str, command: str, known: dict | None, extra: tuple) -> None:
    """A part's `flags:` (or a scale's, with EXTRA keys): tpubench flags of COMMAND, not owned."""
    for key, value in doc.items():
        if key in OWNED:
            raise errors.UsageError(
                f"{where}: {key} is set by the study for each cell (data: and setups: choose "
                "data and machines; --results_dir the directory)"
            )
        if key in extra and key in ("models", "setups"):
            if not isinstance(value, list) or not all(isinstance(m, str) for m in value):
                raise errors.UsageError(f"{where}: {key} must be a list of names")
            continue
        if key in extra:
            least = 8 if key == "jpeg_examples" else 1
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise errors.UsageError(
                    f"{where}: {key}={value!r} must be a whole number >= {least}"
                )
            continue
        names_known = (known or {}).get(command)
        if names_known is not None and key not in names_known:
            close = difflib.get_close_matches(str(key), sorted(names_known), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            shown = data_bench.shown(command)
            raise errors.UsageError(
                f"unknown `{shown}` flag in {where}: {key!r}{hint}; `{shown} --helpfull` lists them"
            )
        if isinstance(value, (dict, list)) or value is None:
            raise errors.UsageError(f"{where}: {key} must be a number, a word or true/false")
