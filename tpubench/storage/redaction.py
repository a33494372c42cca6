"""Credentials never leave the process: one `redact` for everything tpubench writes.

A URL can carry a secret in two places: its user-info (`gs://user:token@bucket/x`,
`https://user:pass@host/`) and its query (`?token=...`, `?X-Goog-Signature=...`).
A flag can carry one by its name (`--api_key=...`).  `redact` replaces each with
`<redacted>` in a string, a list or a dict (recursively), so run records (argv,
flags, config, errors), the console's error line and the echoed `tpubench
rerun:` line never show them.  Metric files and TensorBoard hold only scalars
under fixed names (`writers.py`), so no text reaches them.

Pure Python, no TensorFlow.
"""

from __future__ import annotations

import re

MARK = "<redacted>"

# Flag names whose value is a secret whatever it looks like.
SECRET_FLAG = re.compile(r"(token|secret|password|credential|api_?key|private_?key)", re.I)
# Query parameter names whose value is a secret (signed URLs, OAuth, API keys).
_SECRET_PARAM = re.compile(
    r"(token|secret|passw(or)?d|credential|api_?key|private_?key|access_?key|signature"
    r"|^sig$|^key$|^auth|session)",
    re.I,
)
# scheme://user-info@ : everything between '//' and an '@' before the host ends.
_USERINFO = re.compile(r"(?P<scheme>\b[a-z][a-z0-9+.-]*://)(?P<info>[^/?#@\s]+)@", re.I)
# ?name=value or &name=value (also ';'), the value up to the next separator.
_QUERY = re.compile(r"(?P<lead>[?&;])(?P<name>[^=&;#\s?]+)=(?P<value>[^&;#\s]*)")


def _query_param(m: re.Match) -> str:
    if _SECRET_PARAM.search(m.group("name")) and m.group("value") not in ("", MARK):
        return f"{m.group('lead')}{m.group('name')}={MARK}"
    return m.group(0)


def _userinfo(m: re.Match) -> str:
    return m.group(0) if m.group("info") == MARK else f"{m.group('scheme')}{MARK}@"


def redact_text(text: str) -> str:
    """TEXT with URL user-info and token-like query values replaced by `<redacted>`."""
    if "@" in text and "://" in text:
        text = _USERINFO.sub(_userinfo, text)
    if "=" in text and ("?" in text or "&" in text or ";" in text):
        text = _QUERY.sub(_query_param, text)
    return text


def redact(value):
    """VALUE with every URL credential replaced by `<redacted>`.

    Strings lose URL user-info and token-like query values; lists, tuples and
    dicts are redacted item by item (a new object; VALUE is not changed);
    anything else is returned as it is.
    """
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: redact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact(v) for v in value)
    return value


def redact_arg(arg: str) -> str:
    """One command-line argument: `--api_key=X` loses X whole; others lose URL secrets."""
    name, sep, _ = arg.partition("=")
    if sep and name.startswith("-") and SECRET_FLAG.search(name.lstrip("-")):
        return f"{name}={MARK}"
    return redact_text(arg)


def redact_argv(argv: list[str]) -> list[str]:
    """ARGV with credential-named flag values and URL secrets redacted."""
    return [redact_arg(a) if isinstance(a, str) else a for a in argv]


def redact_flags(values: dict) -> dict:
    """Flag values: a credential-named flag loses its value whole, every other loses URL secrets."""
    return {k: (MARK if SECRET_FLAG.search(k) else redact(v)) for k, v in values.items()}


def has_redactions(value) -> bool:
    """Whether VALUE (a string, list or dict) holds a `<redacted>` mark anywhere."""
    if isinstance(value, str):
        return MARK in value
    if isinstance(value, dict):
        return any(has_redactions(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(has_redactions(v) for v in value)
    return False
