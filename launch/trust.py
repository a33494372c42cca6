"""What in a sweep file makes a run import or install code: refused unless --trust-code.

A sweep file is data from anywhere (a colleague, a repository).  Every
configuration becomes a `tpubench` command line, so a `model_module` (a
Python file the run imports) or a `flagfile` (which may name one) in its
flags would run that code in every run with no word to the user.  And its
`cloud:` mapping may choose the code itself: the package each VM installs,
the container image each GKE pod runs, the boot image each VM starts from.
The rules are tpubench's own (tpubench/core/code_flags.py); this is their
launcher spelling, and `CODE_SETTINGS` is the one list of such cloud keys
(`tpubench study` reads it as each executor's `code_keys` in `tpubench-launch
executors --json`), with the keys each executor declares as its own
`code_settings` (aws_batch's job_definition names a container image):
`code_settings()`.  sweep/file.load applies both to every file, whatever
the executor.
"""

from __future__ import annotations

from tpubench.core import code_flags
from tpubench.core import errors as core_errors
from tpubench_launch import errors

TRUST_FLAG = "--trust-code"
# cloud: key -> what its value chooses.  Not here: tpu_runtime (one of Google's
# TPU runtime images, by version), package_sha256 (it narrows what is installed).
CODE_SETTINGS = {
    "package": "the tpubench package every VM installs",
    "package_index_version": "the tpubench release every VM installs from the package index",
    "image": "the container image every GKE pod runs",
    "image_family": "the boot image every GCE VM starts from",
    "image_project": "the project of the boot image every GCE VM starts from",
}


def code_settings() -> dict[str, str]:
    """CODE_SETTINGS and every registered executor's own (`Executor.code_settings`)."""
    from tpubench_launch import executors  # the registry's executors import this module

    found = [executors.REGISTRY.get(n) for n in executors.REGISTRY.names()]
    return {**CODE_SETTINGS, **{k: v for e in found for k, v in e.code_settings.items()}}


def check(path: str, where: str, flags: dict, trusted: bool) -> list[str]:
    """UsageError for the first code-loading flag unless TRUSTED; else the warning lines."""
    try:
        return code_flags.check(path, where, flags, trusted, TRUST_FLAG, "every run")
    except core_errors.UsageError as e:  # the launcher's own error, which its CLI prints
        raise errors.UsageError(str(e)) from None


def check_cloud(path: str, cloud: dict, trusted: bool) -> list[str]:
    """UsageError for the first cloud key that chooses code unless TRUSTED; else warnings."""
    try:
        return code_flags.check_settings(
            path, "cloud.", cloud, code_settings(), trusted, TRUST_FLAG
        )
    except core_errors.UsageError as e:
        raise errors.UsageError(str(e)) from None
