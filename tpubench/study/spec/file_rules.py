"""What a whole study file is held to beyond its keys: its size, its numbers' ranges, the
names that become paths, and the code it names (`study run` asks more than `report`)."""

from __future__ import annotations

import dataclasses

from tpubench.core import bounds, code_flags, errors, names, safe_files, safe_text


@dataclasses.dataclass(frozen=True)
class Rules:
    """What a whole study file is held to beyond its keys (`study run` asks more than `report`).

    max_cells: the most cells it may expand to (counted before expanding).
    run: its flags become command lines: code it names needs TRUST_CODE.
    local: its cells run here, so the files its flags name must be safe to read here.
    """

    max_cells: int = 10_000
    run: bool = False
    trust_code: bool = False
    local: bool = True


def whole(study, rules: Rules) -> list[str]:
    """The whole file against RULES; returns the lines to print before it runs (code it names)."""
    _names(study)
    _numbers(study)
    _size(study, rules.max_cells)
    return _code(study, rules) if rules.run else []


def _size(study, max_cells: int) -> None:
    """The cells a study file would expand to, counted before any is built; over the cap refused."""
    count = sum(len(p.setups) * len(p.models) * len(p.data) for p in study.parts)
    if count > max_cells:
        raise errors.UsageError(
            f"{study.path} expands to up to {count:,} cells (setups x models x data per "
            f"part), over --max_cells={max_cells:,}; nothing was expanded (raise "
            "--max_cells to run it)"
        )


def _numbers(study) -> None:
    """A study file's numbers within the ranges of the flags they become (core/bounds.py)."""
    keys = ("devices", "vcpus", "batch_size", "batch_per_device", "jpeg_examples", "seconds")
    sizes = {key: bounds.FLAGS[key][:2] for key in keys}

    def check(where: str, found: dict) -> None:
        for key, value in found.items():
            low, high = sizes.get(key, (None, None))
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if low is not None and number and not low <= value <= high:
                raise errors.UsageError(
                    f"{study.path}: {where}{key}={value!r} is out of range; accepted: {low:,} "
                    f"to {high:,}"
                )
            try:
                bounds.check_flag(key, value)
            except errors.UsageError as e:
                raise errors.UsageError(f"{study.path}: {where}{key}: {e}") from None

    for part in study.parts:
        check(f"parts ({part.name}): flags.", part.flags)
        for name, found in sorted(part.scale.items()):
            check(f"parts ({part.name}): scale.{name}.", found)
        for item in part.setups:
            check(f"parts ({part.name}): setups ({item.label}).", vars(item))
        for item in part.models:
            check(f"parts ({part.name}): models ({item.model}).", vars(item))


def _names(study) -> None:
    """Names that become paths (results, logs, reports, charts) and models that are imported."""
    names.check_word(study.name, f"{study.path}: name")  # runs/studies/NAME, cell ids
    for part in study.parts:
        names.check_word(part.name, f"{study.path}: parts ({part.name}).name")  # chart files
        for item in part.models:
            if not names.is_model_name(item.model):
                raise errors.UsageError(
                    f"{study.path}: parts ({part.name}).models: unknown model "
                    f"{safe_text.shown(repr(item.model), 120)}; accepted: {names.MODEL_RULE}"
                )


def _code(study, rules: Rules) -> list[str]:
    """A study file naming code (model_module, flagfile, a model tpubench does not ship) runs
    only with trust_code; a file its local cells read (price_catalog, user_conf) must be a
    regular file of bounded size."""
    warned = []
    for part in study.parts:
        places = [("flags.", part.flags)]
        places += [(f"scale.{s}.", v) for s, v in sorted(part.scale.items())]
        # A part's models with its flags: a --model_module there defines them (named once).
        places += [("models: ", {**part.flags, "model": m.model}) for m in part.models]
        for where, found in places:
            lines = code_flags.check(
                study.path, f"parts ({part.name}): {where}", found, rules.trust_code
            )
            warned += [x for x in lines if x not in warned]
            if rules.local:
                safe_files.check_flags(found, f"{study.path}: parts ({part.name}): {where}")
    return warned
