"""Defines one subcommand's flags (common ones included) and remembers their names.

Nothing below the CLI reads FLAGS: configs.py turns the parsed flags into
frozen configs once.  `python -m tpubench.cli.flags train` prints the train
flags' names as JSON: what tpubench-launch checks the flags it passes against;
with `--types` it prints each flag's type (what `tpubench rerun` checks a
record's flags against).
"""

from __future__ import annotations

from absl import flags

from tpubench.cli import flag_groups, subcommands
from tpubench.core import bounds

FLAGS = flags.FLAGS
_defined: set[str] = set()


def define(subcommand: str) -> None:
    """Defines the common flags and SUBCOMMAND's flags, remembering their names."""
    before = set(FLAGS)
    flag_groups.define_common()
    subcommands.BY_NAME[subcommand].module.define()
    _defined.update(set(FLAGS) - before)


def defined() -> frozenset[str]:
    """The names of the flags `define` has defined in this process."""
    return frozenset(_defined)


def names(subcommand: str) -> list[str]:
    """SUBCOMMAND's flag names (with the common ones), sorted."""
    define(subcommand)
    return sorted(_defined)


def kinds(subcommand: str) -> dict[str, dict]:
    """SUBCOMMAND's flags: name -> {"type", "enum", "lower", "upper"} (absl's type and limits).

    What `tpubench rerun` checks a record's flags against: only these names,
    each with a value of its type.
    """
    out = {}
    for name in names(subcommand):
        flag = FLAGS[name]
        enum = getattr(flag.parser, "enum_values", None)
        lower = getattr(flag.parser, "lower_bound", None)
        upper = getattr(flag.parser, "upper_bound", None)
        typ = flag.flag_type()
        if name in bounds.FLAGS and typ in ("int", "float"):  # the range from what it means
            low, high, _ = bounds.FLAGS[name]
            cast = int if typ == "int" else float
            lower = cast(low) if lower is None else max(lower, cast(low))
            upper = cast(high) if upper is None else min(upper, cast(high))
        out[name] = {
            "type": typ,
            "enum": list(enum) if enum else None,
            "lower": lower,
            "upper": upper,
        }
    return out


def flag_values() -> dict:
    """The value of every tpubench flag of this subcommand (for the run record)."""
    return {name: FLAGS[name].value for name in sorted(_defined)}


if __name__ == "__main__":
    import json
    import sys

    sub = sys.argv[1] if len(sys.argv) > 1 else "train"
    print(json.dumps(kinds(sub) if "--types" in sys.argv[2:] else names(sub)))
