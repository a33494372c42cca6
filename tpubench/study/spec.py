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
import difflib
import pathlib

from tpubench.core import bounds, errors, safe_yaml, vocab
from tpubench.hardware import memory_cap
from tpubench.study import data_bench, fields

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
    "models",
)
MODEL_KEYS = ("model", "batch_size", "batch_per_device", "precision", "optimizer")
COMMANDS = tuple(data_bench.WORDS)  # train, infer, data_bench (the input pipeline alone)
DATA = ("synthetic", "real", "jpeg", "jpeg_gs")
# A cell is one process (or a local parameter-server cluster): no multi_worker; no auto,
# since a study names what it compares.
STRATEGIES = tuple(s for s in vocab.STRATEGIES if s not in ("auto", "multi_worker"))
ALL_REDUCE = tuple(a for a in vocab.MIRRORED_ALL_REDUCE if a != "auto")
VARIABLES = ("cpu", "gpu")  # where a parameter-server setup keeps the variables
SCALES = ("smoke", "full")
# The study owns these flags: they point each cell at its records and label.
OWNED = ("results_dir", "model_dir", "run_label", "data_dir", "use_synthetic_data", "machine")
# Not tpubench flags: how many photos the `jpeg` data holds at this scale, and
# the models this scale runs (default all: a smoke run keeps to one or two),
# the setups it runs (labels, default all), and the seconds one cell takes
# (for the cost preview).
SCALE_KEYS = ("jpeg_examples", "models", "setups", "seconds")
_INTS = ("devices", "vcpus", "batch_size", "batch_per_device")


@dataclasses.dataclass(frozen=True)
class Setup:
    """One machine of a part: a label and what it runs on."""

    label: str
    device: str = "cpu"
    devices: int = 1
    vcpus: int | None = None  # pinned cores and thread pools
    machine: str | None = None  # priced as; default tpubench's own choice
    pricing: str | None = None
    batch_size: int | None = None
    batch_per_device: int | None = None
    precision: str | None = None
    optimizer: str | None = None  # --optimizer (None: the part's, else the model's own)
    strategy: str | None = None
    all_reduce: str | None = None
    variables: str | None = None  # parameter servers: variables on the cpu or a gpu
    memory: str | None = None  # --memory_limit: a cap on the run's memory, "1GiB"
    read_mb_per_s: float | None = None  # --read_mb_per_s: an emulated disk's read rate
    models: tuple[str, ...] = ()  # only these models (default all)


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


def load(name_or_path: str, forms=(), checks=(), known_flags: dict | None = None) -> Study:
    """Reads and checks a study file (a shipped name or a path).

    Args:
      name_or_path: `cnn_scaling` or `my_study.yaml`.
      forms: the report forms a study may name (report.FORMS).
      checks: the finding kinds a study may name: {kind: validate(check, parts, where)}.
      known_flags: {command: flag names} to check `flags`/`scale` against.

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
    return Study(
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
    setups = tuple(_setup(s, f"{where}.setups") for s in listed)
    labels = [s.label for s in setups]
    if len(set(labels)) != len(labels):
        raise errors.UsageError(f"{where}.setups: two setups share a label ({', '.join(labels)})")
    if command == data_bench.COMMAND:
        data_bench.check_part(data, listed, models, where)
    flags = _flags(doc.get("flags"), f"{where}.flags", command, known_flags, ())
    scale = fields.mapping(doc.get("scale"), f"{where}.scale")
    fields.keys(scale, SCALES, f"{where}.scale")
    scales = {
        s: _flags(scale.get(s), f"{where}.scale.{s}", command, known_flags, SCALE_KEYS)
        for s in SCALES
    }
    names = [m.model for m in models]
    for s, values in scales.items():
        for m in values.get("models", []):
            if m not in names:
                raise errors.unknown(f"model in {where}.scale.{s}.models:", m, names)
        for label in values.get("setups", []):
            if label not in labels:
                raise errors.unknown(f"setup label in {where}.scale.{s}.setups:", label, labels)
    _values({k: doc[k] for k in ("optimizer",) if k in doc}, where)  # train cells take it
    return Part(name, command, models, data, setups, flags, scales, doc.get("optimizer"))


def _model(item, where: str) -> ModelItem:
    part = dict(item) if isinstance(item, dict) else {"model": item}
    fields.keys(part, MODEL_KEYS, where)
    fields.text(part.get("model"), f"{where}.model")
    _values(part, where)
    return ModelItem(**part)


def _setup(item, where: str) -> Setup:
    doc = dict(fields.mapping(item, where))
    fields.keys(doc, SETUP_KEYS, where)
    label = fields.text(doc.get("label"), f"{where}.label")
    where = f"{where} ({label})"
    _values(doc, where)
    if doc.get("device", "cpu") not in vocab.ACCELERATORS:
        raise errors.unknown(f"device in {where}:", str(doc.get("device")), vocab.ACCELERATORS)
    if doc.get("pricing", "on_demand") not in vocab.PRICINGS:
        raise errors.unknown(f"pricing in {where}:", str(doc.get("pricing")), vocab.PRICINGS)
    if doc.get("strategy", "one_device") not in STRATEGIES:
        raise errors.unknown(f"strategy in {where}:", str(doc.get("strategy")), STRATEGIES)
    if doc.get("all_reduce", "nccl") not in ALL_REDUCE:
        raise errors.unknown(f"all_reduce in {where}:", str(doc.get("all_reduce")), ALL_REDUCE)
    if doc.get("variables") is not None:
        if doc["variables"] not in VARIABLES:
            raise errors.unknown(f"variables in {where}:", str(doc["variables"]), VARIABLES)
        if doc.get("strategy") not in ("central_storage", "parameter_server"):
            raise errors.UsageError(
                f"{where}: variables={doc['variables']} is where parameter servers keep them; "
                "it needs strategy: central_storage or parameter_server"
            )
        if doc["variables"] == "gpu" and doc.get("device", "cpu") != "gpu":
            raise errors.UsageError(f"{where}: variables=gpu needs device: gpu")
    if doc.get("vcpus") and doc.get("device", "cpu") == "tpu":
        raise errors.UsageError(f"{where}: vcpus pins host threads; a TPU VM's host is its own")
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
    models = doc.pop("models", None) or []
    if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
        raise errors.UsageError(f"{where}.models must be a list of model names")
    return Setup(**doc, models=tuple(models))


def _values(doc: dict, where: str) -> None:
    for k in _INTS:
        v = doc.get(k)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
            raise errors.UsageError(f"{where}: {k}={v!r} must be a whole number >= 1")
    if doc.get("batch_size") and doc.get("batch_per_device"):
        raise errors.UsageError(f"{where}: give batch_size or batch_per_device, not both")
    if doc.get("precision", "fp32") not in vocab.PRECISIONS:
        raise errors.unknown(f"precision in {where}:", str(doc.get("precision")), vocab.PRECISIONS)
    if doc.get("optimizer", "model") not in vocab.OPTIMIZERS:
        raise errors.unknown(f"optimizer in {where}:", str(doc.get("optimizer")), vocab.OPTIMIZERS)
    for k in ("machine", "model"):
        if k in doc and (not isinstance(doc[k], str) or not doc[k].strip()):
            raise errors.UsageError(f"{where}: {k}={doc[k]!r} must be a non-empty string")


def _flags(doc, where: str, command: str, known_flags, extra: tuple) -> dict:
    doc = fields.mapping(doc, where)
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
        known = (known_flags or {}).get(command)
        if known is not None and key not in known:
            close = difflib.get_close_matches(str(key), sorted(known), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            shown = data_bench.shown(command)
            raise errors.UsageError(
                f"unknown `{shown}` flag in {where}: {key!r}{hint}; `{shown} --helpfull` lists them"
            )
        if isinstance(value, (dict, list)) or value is None:
            raise errors.UsageError(f"{where}: {key} must be a number, a word or true/false")
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
