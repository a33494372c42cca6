"""Building the typed run record (record_view.py) from its JSON mapping.

`build(cls, mapping)` fills a frozen dataclass from the keys named like its
fields; `sub`, `rows` and `raw` mark the fields that hold a section, a list
of sections, or the mapping itself.
"""

from __future__ import annotations

import dataclasses
from typing import Any


def sub(cls, optional: bool = False):
    """A field holding section CLS (None when OPTIONAL and absent)."""
    meta = {"section": cls, "optional": optional}
    if optional:
        return dataclasses.field(default=None, metadata=meta)
    return dataclasses.field(default_factory=lambda: build(cls, {}), metadata=meta)


def rows(cls):
    """A field holding a tuple of CLS built from a JSON list of mappings."""
    return dataclasses.field(default=(), metadata={"rows": cls})


def raw():
    """The mapping a section was built from, for code that takes the dict."""
    return dataclasses.field(default_factory=dict, repr=False, compare=False)


def build(cls, value, name: str = "record"):
    """CLS from mapping VALUE: each field from the key of its name, sections recursively."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise TypeError(f"field {name!r} is {type(value).__name__}, not a mapping")
    kw: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name == "raw":
            kw["raw"] = value
            continue
        if f.name not in value:
            continue
        v, section, listed = value[f.name], f.metadata.get("section"), f.metadata.get("rows")
        if section is not None:
            if f.metadata.get("optional") and not v:
                continue  # absent or empty: None, as `if record.get(...)` read it
            v = build(section, v, f.name)
        elif listed is not None:
            if not isinstance(v, (list, tuple)):
                raise TypeError(f"field {f.name!r} is {type(v).__name__}, not a list")
            v = tuple(build(listed, x, f.name) for x in v)
        kw[f.name] = v
    return cls(**kw)
