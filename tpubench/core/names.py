"""Names that become parts of paths or imports, checked once where they are read.

A study's `name:`, a part's name or a cell id is joined into results, model,
log and report paths; a model name is looked up and may be imported.  A name
read from a file or a flag is data from anywhere, so `../x`, an absolute
path or a dotted module path must never reach `os.path.join` or the
importer.  Each rule below is the one place its kind of name is checked, and
a refusal is one line naming the rule (docs/security.md).
"""

from __future__ import annotations

import re

from tpubench.core import errors, safe_text

# A file-name-safe word: no separator, no dot segment, no leading '-' (an option).
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
WORD_RULE = "1-100 letters, digits, '_', '.' or '-', starting with a letter or digit"
# A model name: an identifier that starts with a letter, never a dotted module path nor a
# private or special module of the models' package (`_imagenet`, `__init__`).
_MODEL = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,99}")
MODEL_RULE = "a name of letters, digits and '_' (at most 100), starting with a letter"
BUILTIN_MODELS = "tpubench_models"  # the package of the models shipped with tpubench
GCS_OBJECT_BYTES = 1024  # Cloud Storage's limit on an object name, in UTF-8 bytes


def is_word(value) -> bool:
    return isinstance(value, str) and _WORD.fullmatch(value) is not None


def check_word(value, what: str) -> str:
    """VALUE when it is a file-name-safe word, else a UsageError naming WHAT and the rule."""
    if not is_word(value):
        raise errors.UsageError(
            f"{what}={safe_text.shown(repr(value), 120)} is refused: it becomes part of a file "
            f"path; accepted: {WORD_RULE}"
        )
    return value


def is_model_name(value) -> bool:
    return isinstance(value, str) and _MODEL.fullmatch(value) is not None


def builtin_models() -> tuple[str, ...]:
    """The models shipped with tpubench: the public modules of its models' package, listed
    from the installation's files (nothing imported), each module named as its model."""
    import importlib.util
    import pkgutil

    spec = importlib.util.find_spec(BUILTIN_MODELS)
    where = list(spec.submodule_search_locations or []) if spec else []
    return tuple(sorted(m.name for m in pkgutil.iter_modules(where) if is_model_name(m.name)))


def gcs_problem(url) -> str | None:
    """Why the gs:// URL cannot name an object (dot or empty segments, too long), else None.

    One trailing '/' (a prefix, `gs://b/runs/`) is accepted.
    """
    text = str(url)
    if not text.startswith("gs://"):
        return None
    bucket, _, name = text[len("gs://") :].partition("/")
    if bucket in ("", ".", ".."):
        return f"{text} names no bucket (expected gs://BUCKET/PATH)"
    if len(name.encode("utf-8", "surrogatepass")) > GCS_OBJECT_BYTES:
        return (
            f"{safe_text.shown(text, 80)}: the object name is "
            f"{len(name.encode('utf-8', 'surrogatepass')):,} bytes; Cloud Storage accepts at most "
            f"{GCS_OBJECT_BYTES:,}"
        )
    segments = name[:-1].split("/") if name.endswith("/") else name.split("/")
    if name and any(s in (".", "..") for s in segments):
        return f"{text}: '.' and '..' segments are refused in a gs:// path (no such folders there)"
    if name and any(s == "" for s in segments):
        return f"{text}: an empty segment ('//') is refused in a gs:// path"
    return None
