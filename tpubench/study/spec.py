"""Study files: one YAML file per published comparison, read strictly.

    name: cnn_scaling                    # default: the file's stem
    title: ...                           # one line
    source: ...                          # the study it reruns
    form: {kind: scaling}                # how its report looks (report.FORMS)
    published: [tf-dgx1]                 # report/published.py sets shown beside
    repeats: 5                           # runs per cell at --scale=full (default 3)
    parts:                               # each part is a grid of cells
      - name: train
        command: train                   # or infer
        models: [resnet50, {model: alexnet, batch_per_device: 512}]
        data: [synthetic, jpeg]          # synthetic | real | jpeg | jpeg_gs
        setups:                          # the machines (one label each)
          - {label: 1 GPU, device: gpu, devices: 1, batch_per_device: 64}
          - {label: 1 GPU no cuDNN, device: gpu, params: {imdb_bilstm: {cudnn: false}}}
        flags: {steps_per_loop: 10}      # tpubench flags for every cell
        scale:                           # flags per --scale (they win)
          smoke: {tiny: true, train_steps: 3, batch_size: 8}
          full: {train_steps: 110}
    findings:
      - text: ...
        check: {kind: scaling, part: train, band: at least 90% of ideal}   # study/bands.py

Every key is checked: an unknown key or a bad value is one UsageError that
names the key and what is accepted.  Read by core/safe_yaml.py: a study file is data,
never code.
"""

from __future__ import annotations

import dataclasses
import pathlib

from tpubench.core import basis, errors, safe_yaml
from tpubench.study import data_bench, fields, validate

TOP_KEYS = (
    "name",
    "title",
    "source",
    "question",
    "form",
    "published",
    "repeats",
    "parts",
    "findings",
)
# Runs per cell at --scale=full unless the file says more: a verdict needs an
# interval, and an interval needs repeats.  --scale=smoke runs each cell once.
REPEATS = 3
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
    precision: str | None = None
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
    precision: str | None = None
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


@dataclasses.dataclass(frozen=True)
class Finding:
    text: str
    check: dict


@dataclasses.dataclass(frozen=True)
class Study:
    name: str
    path: str
    title: str
    source: str
    question: str
    form: dict
    published: tuple[str, ...]
    parts: tuple[Part, ...]
    findings: tuple[Finding, ...]
    repeats: int = REPEATS
    said: tuple[str, ...] = ()  # lines to print before it runs: the code it names

    def part(self, name: str) -> Part:
        return next(p for p in self.parts if p.name == name)

    def runs_per_cell(self, scale: str) -> int:
        return 1 if scale == "smoke" else self.repeats


def shipped_dir() -> pathlib.Path:
    return pathlib.Path(__file__).resolve().parent / "studies"


def shipped() -> list[str]:
    return sorted(p.stem for p in shipped_dir().glob("*.yaml"))


def path_of(name_or_path: str) -> pathlib.Path:
    """A shipped study's file by name, or a user's file by path."""
    if name_or_path in shipped():
        return shipped_dir() / f"{name_or_path}.yaml"
    p = pathlib.Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        return p
    raise errors.unknown("study", name_or_path, shipped())


def read_yaml(path: str, what: str, refused_prefix: str = ""):
    """PATH's YAML document; an unreadable or refused file is one UsageError naming WHAT."""
    # The one strict loader (docs/security.md): no aliases, no duplicate keys,
    # size and depth limits.
    try:
        return safe_yaml.load(path)
    except OSError as e:
        raise errors.UsageError(f"cannot read {what} {path}: {e.strerror}") from None
    except safe_yaml.Refused as e:
        raise errors.UsageError(f"{refused_prefix}{e}") from None


def load(
    name_or_path: str,
    forms=(),
    checks=(),
    known_flags: dict | None = None,
    rules: validate.Rules | None = None,
) -> Study:
    """Reads and checks a study file (a shipped name or a path): every check a file gets.

    Args:
      name_or_path: `cnn_scaling` or `my_study.yaml`.
      forms: the report forms a study may name (report.FORMS).
      checks: the finding kinds a study may name: {kind: validate(check, parts, where)}.
      known_flags: {command: flag names} to check `flags`/`scale` against.
      rules: what the whole file is held to (its size; for `run`, the code it names).

    Raises:
      UsageError: unreadable file, bad YAML, an unknown key or a bad value.
    """
    path = path_of(name_or_path)
    doc = read_yaml(str(path), "study file")
    where = str(path)
    if not isinstance(doc, dict):
        raise errors.UsageError(f"{where}: a study file is a mapping with a 'parts' list")
    fields.keys(doc, TOP_KEYS, where)
    form = fields.mapping(doc.get("form"), f"{where}: form")
    if forms and form.get("kind") not in forms:
        raise errors.unknown(f"form.kind in {where}:", str(form.get("kind")), forms)
    parts = tuple(
        _part(p, f"{where}: parts[{i}]", known_flags)
        for i, p in enumerate(fields.nonempty_list(doc.get("parts"), f"{where}: parts"))
    )
    names = [p.name for p in parts]
    if len(set(names)) != len(names):
        raise errors.UsageError(f"{where}: two parts share a name ({', '.join(names)})")
    findings = tuple(
        _finding(f, f"{where}: findings[{i}]", checks, parts)
        for i, f in enumerate(doc.get("findings") or [])
    )
    repeats = doc.get("repeats", REPEATS)
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 2:
        raise errors.UsageError(
            f"{where}: repeats={repeats!r} must be a whole number >= 2 (an interval needs two runs)"
        )
    published = doc.get("published") or []
    if not isinstance(published, list) or not all(isinstance(s, str) for s in published):
        raise errors.UsageError(f"{where}: published must be a list of set names")
    study = Study(
        name=str(doc.get("name") or path.stem),
        path=where,
        title=fields.text(doc.get("title", path.stem), f"{where}: title"),
        source=fields.text(doc.get("source", ""), f"{where}: source", empty=True),
        question=fields.text(doc.get("question", ""), f"{where}: question", empty=True),
        form=form,
        published=tuple(published),
        parts=parts,
        findings=findings,
        repeats=repeats,
    )
    said = validate.whole(study, rules or validate.Rules())
    return dataclasses.replace(study, said=tuple(said)) if said else study


def _part(doc, where: str, known_flags) -> Part:
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


def _finding(doc, where: str, checks, parts) -> Finding:
    doc = fields.mapping(doc, where)
    fields.keys(doc, ("text", "check"), where)
    text = fields.text(doc.get("text"), f"{where}.text")
    check = fields.mapping(doc.get("check"), f"{where}.check")
    kind = check.get("kind")
    if checks and kind not in checks:
        raise errors.unknown(f"check kind in {where}:", str(kind), list(checks))
    if "part" in check and check["part"] not in [p.name for p in parts]:
        raise errors.unknown(f"part in {where}.check:", str(check["part"]), [p.name for p in parts])
    if isinstance(checks, dict):
        checks[kind](check, parts, f"{where}.check")  # the kind's own keys and values
    return Finding(text, check)
