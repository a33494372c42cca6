"""Study files: one YAML file per published comparison, read strictly.

    name: cnn_scaling                    # default: the file's stem
    title: ...                           # one line
    source: ...                          # the study it reruns
    form: {kind: scaling}                # how its report looks (forms.FORMS)
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
        check: {kind: scaling, part: train, band: at least 90% of ideal}   # study/report/bands.py

Every key is checked: an unknown key or a bad value is one UsageError that
names the key and what is accepted.  Read by core/safe_yaml.py: a study file is data,
never code.
"""

from __future__ import annotations

import dataclasses
import pathlib

from tpubench.core import errors, safe_yaml
from tpubench.study.spec import fields, file_rules
from tpubench.study.spec import parts as parts_lib

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
    parts: tuple[parts_lib.Part, ...]
    findings: tuple[Finding, ...]
    repeats: int = REPEATS
    said: tuple[str, ...] = ()  # lines to print before it runs: the code it names

    def part(self, name: str) -> parts_lib.Part:
        return next(p for p in self.parts if p.name == name)

    def runs_per_cell(self, scale: str) -> int:
        return 1 if scale == "smoke" else self.repeats


def shipped_dir() -> pathlib.Path:
    return pathlib.Path(__file__).resolve().parents[1] / "studies"


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
    rules: file_rules.Rules | None = None,
) -> Study:
    """Reads and checks a study file (a shipped name or a path): every check a file gets.

    Args:
      name_or_path: `cnn_scaling` or `my_study.yaml`.
      forms: the report forms a study may name (forms.FORMS).
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
        parts_lib.read(p, f"{where}: parts[{i}]", known_flags)
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
    said = file_rules.whole(study, rules or file_rules.Rules())
    return dataclasses.replace(study, said=tuple(said)) if said else study


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
