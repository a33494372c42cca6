"""The one checker of cloud settings: a sweep file's `cloud:`, a study's `--cloud` file.

`tpubench-launch sweep` checks a sweep file's `cloud:` mapping here when it
reads the file, and `tpubench-launch executors --check-cloud=FILE` checks a
`--cloud` file here, which is how `tpubench study run --cloud=FILE` asks.
So one file is refused, or not, the same way by all three, in the same
words: first a key no executor reads (with close matches and what is
accepted), then the first value outside its format (cloud_names.py, and the
rules an executor declares for its own keys: `setting_rules`).  Every
piece of text from a file or a command line that a line shows (the file's
name, `--prefix`, a key) is escaped: it cannot drive the terminal
(docs/security.md, "Usage errors cost nothing").
"""

from __future__ import annotations

from tpubench.core import safe_text, safe_yaml
from tpubench_launch import cloud_names, errors

# A study's --cloud file also maps its setups to machines (tpubench/study/run/remote.py).
STUDY_KEYS = ("machines",)


def accepted() -> tuple[str, ...]:
    """The keys some registered executor reads, in the launcher's order (plug-ins' too)."""
    from tpubench_launch import executors

    found = [executors.REGISTRY.get(n) for n in executors.REGISTRY.names()]
    return tuple(dict.fromkeys(k for e in found for k in e.cloud_keys()))


def where_of(path: str, prefix: str | None = None) -> str:
    """How a problem line starts: PREFIX, else 'PATH: ', escaped."""
    return safe_text.shown(f"{path}: " if prefix is None else prefix, limit=300)


def problem(raw: dict, where: str, extra: tuple[str, ...] = ()) -> str | None:
    """The one line naming RAW's first key no executor reads (EXTRA are accepted too) or
    first value outside its format, starting with WHERE (escaped); None when there is none."""
    where = safe_text.shown(where, limit=300)
    keys = accepted() + tuple(extra)
    for key in raw:
        if key not in keys:
            return f"{where}{errors.unknown('cloud setting', str(key)[:100], keys)}"
    try:
        cloud_names.check(raw, where)
    except errors.UsageError as e:
        return str(e)
    for key, (pattern, rule) in _own_rules().items():  # an executor's own keys' formats
        value = raw.get(key)
        if value is not None and (not isinstance(value, str) or not pattern.fullmatch(value)):
            return f"{where}cloud.{key}={ascii(value)[:120]} is refused; accepted: {rule}"
    return None


def _own_rules() -> dict:
    """key -> (regex, what is accepted) of every registered executor's `setting_rules`."""
    from tpubench_launch import executors

    found = [executors.REGISTRY.get(n) for n in executors.REGISTRY.names()]
    return {k: v for e in found for k, v in getattr(e, "setting_rules", {}).items()}


def check(raw: dict, where: str, extra: tuple[str, ...] = ()) -> None:
    """UsageError with problem()'s line, if RAW has one."""
    line = problem(raw, where, extra)
    if line:
        raise errors.UsageError(line)


def read(path: str) -> dict:
    """PATH's mapping of cloud settings (empty: none); one UsageError naming PATH otherwise."""
    shown = safe_text.shown(path, limit=300)
    try:
        doc = safe_yaml.load(path)
    except OSError as e:
        raise errors.UsageError(f"cannot read cloud file {shown}: {e.strerror or e}") from None
    except safe_yaml.Refused as e:  # it names the file
        raise errors.UsageError(safe_text.shown(str(e), limit=None)) from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise errors.UsageError(f"{shown}: a mapping of cloud settings, not a {type(doc).__name__}")
    return doc
