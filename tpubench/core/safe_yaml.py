"""The one YAML loader for files a user is handed: bounded, strict, one-line refusals.

`yaml.safe_load` already refuses `!!python` tags, but it expands aliases
(a billion-laughs file of 1 KB took 95 s and 4 GB before a MemoryError),
lets a duplicated key silently replace the first, reads a file of any
size, overflows the stack on deep nesting, and passes control, bidi and
zero-width characters through to the console.  `loads`/`load` refuse all
five with a `Refused` naming the line(s) and what is accepted.

This module imports only PyYAML, the standard library and core/safe_files.py
(a FIFO, a device or a directory in place of the file is refused before a
byte is read): sweep files (tpubench-launch), study files and --cloud files
(tpubench study) all go through it, and each caller turns `Refused` into its
own one-line error.
"""

from __future__ import annotations

import enum
import re

import yaml

from tpubench.core import errors, safe_files

MAX_BYTES = 1 << 20  # a sweep file is a page; 1 MiB is far past any real one
MAX_DEPTH = 50  # nesting of mappings and lists


# Characters no sweep value needs and a console must not receive raw: C0/C1
# controls (TAB aside), DEL, bidi overrides and isolates, zero-width ones.
# The same ranges as tpubench.core.safe_text, which escapes them for display;
# a sweep file is our own input format, so here they are refused instead
# (a double-quoted "\e" would otherwise reach the dry run's command lines).
_UNSAFE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e"
    "\u2060-\u2064\u2066-\u2069\ufeff]"
)


class Refused(ValueError):
    """A YAML text this loader does not accept; the message is one line."""


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader without anchors, aliases or duplicate keys, and with a nesting limit."""

    def __init__(self, stream, name: str):
        super().__init__(stream)
        self._name = name
        self._depth = 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise Refused(
                f"{self._name} line {event.start_mark.line + 1}: YAML anchors and aliases "
                f"(&{event.anchor}, *{event.anchor}) are not accepted; write each value out"
            )
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise Refused(
                f"{self._name} line {event.start_mark.line + 1}: lists and mappings nest deeper "
                f"than {MAX_DEPTH} levels; accepted: at most {MAX_DEPTH}"
            )
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_scalar(self, node):
        value = super().construct_scalar(node)
        bad = _UNSAFE.search(value) if isinstance(value, str) else None
        if bad:
            raise Refused(
                f"{self._name} line {node.start_mark.line + 1}: a value holds the control, "
                f"bidi or invisible character U+{ord(bad.group(0)):04X}; accepted: printable text"
            )
        return value

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: SafeLoader's own error says so
                break
            line = key_node.start_mark.line + 1
            if first is not None:
                raise Refused(
                    f"{self._name}: key {key!r} is given twice (line {first} and line {line}); "
                    "give each key once"
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def loads(text: str, name: str = "<yaml>"):
    """The value of the YAML TEXT (named NAME in messages).

    Raises:
      Refused: too large, not valid YAML, an anchor or alias, a duplicate
        key, or nesting deeper than MAX_DEPTH (one line, naming the line).
    """
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        raise Refused(f"{name} holds {size:,} bytes; accepted: at most {MAX_BYTES:,} bytes")
    loader = _StrictLoader(text, name)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        at = f" at line {where.line + 1}" if where else ""
        raise Refused(f"{name} is not valid YAML{at}: {getattr(e, 'problem', None) or e}") from None
    except RecursionError:
        raise Refused(f"{name}: lists and mappings nest too deeply") from None
    finally:
        loader.dispose()


def load(path: str):
    """The value of the YAML file PATH.

    Raises:
      OSError: no such file, or unreadable.
      Refused: not a regular file (a FIFO would hang, /dev/zero never end),
        too large, not UTF-8, or refused by `loads`.
    """
    try:
        with safe_files.open_regular(path, "", MAX_BYTES, "YAML text") as f:
            data = f.read(MAX_BYTES + 1)
    except safe_files.Unreadable as e:  # the callers' own "cannot read FILE: REASON" lines
        raise e.error from None
    except errors.UsageError as e:
        raise Refused(str(e)) from None
    if len(data) > MAX_BYTES:
        raise Refused(f"{path} grew past {MAX_BYTES:,} bytes; accepted: at most {MAX_BYTES:,}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(f"{path} is not UTF-8 text") from None
    return loads(text, str(path))


class _Dumper(yaml.SafeDumper):
    """PyYAML's safe dumper that writes a typed name (a StrEnum: a price basis) as its string."""


_Dumper.add_multi_representer(enum.StrEnum, lambda d, v: d.represent_str(str(v)))


def dumps(doc, *, all_docs: bool = False) -> str:
    """DOC (or, with ALL_DOCS, a list of documents) as block YAML in the order written.

    What tpubench writes for other programs (sweep files, manifests): typed
    values such as core/basis.Basis become their plain strings, as in a record.
    """
    if all_docs:
        return yaml.dump_all(doc, Dumper=_Dumper, sort_keys=False, width=1000)
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=1000)
