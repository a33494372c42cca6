"""A study file's parts, read strictly: each a grid of models, data and setups (machines).

A part names its command (train, infer or data_bench), its models (a name or
a mapping with a batch, precision, optimizer), its data, its setups (one
label each) and the flags of every cell and of each --scale.
"""

from __future__ import annotations

import dataclasses

from tpubench.core import basis, errors, precision
from tpubench.study.spec import data_bench, fields, validate

PART_KEYS = ("name", "command", "models", "data", "setups", "optimizer", "flags", "scale")
SETUP_KEYS = (
    "label",
    "device",
    "devices",
    "vcpus",
    "machine",
    "pricing",
    "batch_size",
    "batch_per_device",
    "precision",
    "optimizer",
    "strategy",
    "all_reduce",
    "variables",
    "memory",
    "read_mb_per_s",
    "cpu",
    "models",
    "params",
)
MODEL_KEYS = ("model", "batch_size", "batch_per_device", "precision", "optimizer")
COMMANDS = tuple(data_bench.WORDS)  # train, infer, data_bench (the input pipeline alone)
DATA = ("synthetic", "real", "jpeg", "jpeg_gs")
SCALES = ("smoke", "full")


@dataclasses.dataclass(frozen=True)
class Setup:
    """One machine of a part: a label and what it runs on."""

    label: str
    device: str = "cpu"
    devices: int = 1
    vcpus: int | None = None  # pinned cores and thread pools
    machine: str | None = None  # priced as; default tpubench's own choice
    pricing: basis.Basis | None = None
    batch_size: int | None = None
    batch_per_device: int | None = None
    precision: precision.Precision | None = None
    optimizer: str | None = None  # --optimizer (None: the part's, else the model's own)
    strategy: str | None = None
    all_reduce: str | None = None
    variables: str | None = None  # parameter servers: variables on the cpu or a gpu
    memory: str | None = None  # --memory_limit: a cap on the run's memory, "1GiB"
    read_mb_per_s: float | None = None  # --read_mb_per_s: an emulated disk's read rate
    cpu: str | None = None  # a bf16 path (amx, avx512_bf16): runs only on a CPU with it
    models: tuple[str, ...] = ()  # only these models (default all)
    # Model hyperparameters on this setup, by model: ((model, ((name, value), ...)), ...),
    # passed as that model's cells' --params (validate.params).
    params: tuple = ()

    def params_for(self, model: str) -> dict:
        """MODEL's hyperparameters on this setup ({} when it sets none)."""
        return next((dict(pairs) for name, pairs in self.params if name == model), {})


@dataclasses.dataclass(frozen=True)
class ModelItem:
    model: str
    batch_size: int | None = None
    batch_per_device: int | None = None
    precision: precision.Precision | None = None
    optimizer: str | None = None


@dataclasses.dataclass(frozen=True)
class Part:
    name: str
    command: str
    models: tuple[ModelItem, ...]
    data: tuple[str, ...]
    setups: tuple[Setup, ...]
    flags: dict
    scale: dict  # scale name -> {flag: value, jpeg_examples: N}
    optimizer: str | None = None  # every train cell's --optimizer, unless a setup or model says


def read(doc, where: str, known_flags) -> Part:
    """One part of a study file (DOC at WHERE), checked: every bad value is one UsageError."""
    doc = fields.mapping(doc, where)
    fields.keys(doc, PART_KEYS, where)
    name = fields.text(doc.get("name"), f"{where}.name")
    where = f"{where} ({name})"
    command = doc.get("command", "train")
    if command not in COMMANDS:
        raise errors.unknown(f"command in {where}:", str(command), COMMANDS)
    listed = fields.nonempty_list(doc.get("models"), f"{where}.models")
    models = tuple(_model(m, f"{where}.models") for m in listed)
    data = tuple(fields.nonempty_list(doc.get("data", ["synthetic"]), f"{where}.data"))
    for d in data:
        if d not in DATA:
            raise errors.unknown(f"data in {where}:", str(d), DATA)
    listed = fields.nonempty_list(doc.get("setups"), f"{where}.setups")
    names = [m.model for m in models]
    setups = tuple(_setup(s, f"{where}.setups", names) for s in listed)
    labels = [s.label for s in setups]
    if len(set(labels)) != len(labels):
        raise errors.UsageError(f"{where}.setups: two setups share a label ({', '.join(labels)})")
    if command == data_bench.COMMAND:
        data_bench.check_part(data, listed, models, where)
    flags = _flags(doc.get("flags"), f"{where}.flags", command, known_flags, ())
    scale = fields.mapping(doc.get("scale"), f"{where}.scale")
    fields.keys(scale, SCALES, f"{where}.scale")
    scales = {
        s: _flags(scale.get(s), f"{where}.scale.{s}", command, known_flags, validate.SCALE_KEYS)
        for s in SCALES
    }
    for s, values in scales.items():
        for m in values.get("models", []):
            if m not in names:
                raise errors.unknown(f"model in {where}.scale.{s}.models:", m, names)
        for label in values.get("setups", []):
            if label not in labels:
                raise errors.unknown(f"setup label in {where}.scale.{s}.setups:", label, labels)
    validate.values({k: doc[k] for k in ("optimizer",) if k in doc}, where)  # train cells take it
    return Part(name, command, models, data, setups, flags, scales, doc.get("optimizer"))


def _model(item, where: str) -> ModelItem:
    part = dict(item) if isinstance(item, dict) else {"model": item}
    fields.keys(part, MODEL_KEYS, where)
    fields.text(part.get("model"), f"{where}.model")
    validate.values(part, where)
    return ModelItem(**part)


def _setup(item, where: str, part_models: list[str]) -> Setup:
    doc = dict(fields.mapping(item, where))
    fields.keys(doc, SETUP_KEYS, where)
    label = fields.text(doc.get("label"), f"{where}.label")
    validate.setup(doc, f"{where} ({label})")
    if "pricing" in doc:  # the setup's price basis, typed from here on
        doc["pricing"] = basis.parse(doc["pricing"], f"{where} ({label}).pricing")
    models = doc.pop("models", None) or []
    if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
        raise errors.UsageError(f"{where} ({label}).models must be a list of model names")
    params = validate.params(
        doc.pop("params", None), f"{where} ({label}).params", models or part_models
    )
    return Setup(**doc, models=tuple(models), params=params)


def _flags(doc, where: str, command: str, known_flags, extra: tuple) -> dict:
    doc = fields.mapping(doc, where)
    validate.flags(doc, where, command, known_flags, extra)
    return doc
