"""Checking the values of a study file: each failure is one UsageError naming the key."""

from __future__ import annotations

from tpubench.core import errors


def keys(doc: dict, accepted: tuple, where: str) -> None:
    for key in doc:
        if key not in accepted:
            raise errors.unknown(f"key in {where}:", str(key), accepted)


def mapping(value, where: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise errors.UsageError(f"{where} must be a mapping, got {type(value).__name__}")
    return value


def nonempty_list(value, where: str) -> list:
    if not isinstance(value, list) or not value:
        raise errors.UsageError(f"{where} must be a non-empty list")
    return value


def text(value, where: str, empty: bool = False) -> str:
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise errors.UsageError(f"{where} must be text, got {value!r}")
    return value.strip()
