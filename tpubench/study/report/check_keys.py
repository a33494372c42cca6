"""The keys each kind of finding takes in a study file, checked against its part."""

from __future__ import annotations

from tpubench.core import errors
from tpubench.study.report import bands
from tpubench.study.spec import standins

# kind -> (its required keys, its optional ones)
KEYS = {
    "knee": (("part", "band"), ("among",)),
    "ratio": (("part", "a", "b", "band"), ("model",)),
    "about_equal": (("part", "a", "b", "band"), ("model",)),
    "cheapest": (("part", "setup", "band"), ("among",)),
    "slowest": (("part", "setup", "model", "band"), ("among",)),
    "fastest": (("part", "setup", "band"), ("among",)),
    "scaling": (("part", "band"), ("device", "models", "data")),
    "data_ratio": (("part", "a", "b", "band"), ("except", "device", "models", "devices")),
    "best_method": (("part", "expect"), ("device", "devices", "models", "except")),
    "sizing": (("part", "band"), ()),
    "unmeasurable": (("needs",), ()),
}


def validate(check: dict, parts, where: str) -> None:
    """A finding's CHECK at WHERE: its kind's keys, and the labels, models, counts it names."""
    required, optional = KEYS[check["kind"]]
    for key in required:
        if key not in check:
            raise errors.UsageError(f"{where}: kind {check['kind']} needs '{key}'")
    for key in check:
        if key not in ("kind", *required, *optional):
            raise errors.unknown(
                f"key in {where} (kind {check['kind']}):", key, required + optional
            )
    part = next((p for p in parts if p.name == check.get("part")), None)
    labels = [s.label for s in part.setups] if part else []
    uses_labels = check["kind"] in ("ratio", "about_equal", "cheapest", "slowest", "fastest")
    for key in ("a", "b", "setup") if uses_labels else ():
        if key in check and check[key] not in labels:
            raise errors.unknown(f"setup label in {where}.{key}:", str(check[key]), labels)
    for label in check.get("among") or []:
        if label not in labels:
            raise errors.unknown(f"setup label in {where}.among:", str(label), labels)
    if "models" in check and (not isinstance(check["models"], list) or not check["models"]):
        raise errors.UsageError(f"{where}.models={check['models']!r} must be a list of models")
    models = [m.model for m in part.models] if part else []
    for model in [check.get("model")] + list(check.get("models") or []):
        if model and model not in models:
            raise errors.unknown(f"model in {where}:", str(model), models)
    if part:
        _validate_counts(check, part, where)
        bands.validate(check, part, where)
        standins.validate(check, part, where)


def _validate_counts(check: dict, part, where: str) -> None:
    """`devices` (one count or a list) are device counts and `data` data kinds of PART."""
    counts = sorted({s.devices for s in part.setups})
    for n in bands.each(check.get("devices")) if "devices" in check else ():
        if not isinstance(n, int) or isinstance(n, bool) or n not in counts:
            raise errors.UsageError(
                f"{where}.devices={check['devices']!r}: {n!r} is not a device count of part "
                f"{part.name} (accepted: {', '.join(map(str, counts))}, or a list of them)"
            )
    for kind in bands.each(check.get("data")) if "data" in check else ():
        if kind not in part.data:
            raise errors.unknown(f"data kind in {where}.data:", str(kind), part.data)
