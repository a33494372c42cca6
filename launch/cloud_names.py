"""The formats of cloud settings in a sweep or --cloud file, checked before any gcloud call.

A project, zone, image family or name prefix reaches `gcloud` command lines
and becomes part of VM and TPU names; a value outside Google Cloud's own
rules would fail minutes later (or name something else), so each is checked
here against its rule and refused in one line naming the rule.  Numbers get
ranges from what they mean.
"""

from __future__ import annotations

import re

from tpubench_launch import errors

# Google Cloud's rules: project IDs 6-30 characters; zones like us-central1-a;
# resource names (image families, VM and TPU names) RFC 1035 labels of <= 63.
_PROJECT_ID = (
    re.compile(r"[a-z][a-z0-9-]{4,28}[a-z0-9]"),
    "6-30 lowercase letters, digits or '-', starting with a letter (a project ID)",
)
_RULES = {
    "project": _PROJECT_ID,
    "image_project": _PROJECT_ID,
    "zone": (
        re.compile(r"[a-z]+-[a-z]+[0-9]+-[a-z]"),
        "a zone such as us-central1-a",
    ),
    "image_family": (
        re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?"),
        "1-63 lowercase letters, digits or '-', starting with a letter (a GCE image family)",
    ),
    "tpu_runtime": (
        re.compile(r"[a-z0-9][-a-z0-9._]{0,62}"),
        "1-63 lowercase letters, digits, '-', '_' or '.' (a TPU runtime version)",
    ),
    # pip's own forms: a release (quoted in YAML: 1.10 would be a number) and a digest.
    "package_index_version": (
        re.compile(r"[0-9][0-9A-Za-z.+!-]{0,63}"),
        "a tpubench release such as '1.2.3', in quotes (the exact version pip installs)",
    ),
    "package_sha256": (
        re.compile(r"[0-9a-f]{64}"),
        "64 lowercase hex digits (the sha256 of the package file, as `pip hash` prints it)",
    ),
    # The head of every VM and TPU name (vm_name adds '-SWEEP-ID'): <= 40 leaves room.
    "name_prefix": (
        re.compile(r"[a-z]([-a-z0-9]{0,38}[a-z0-9])?"),
        "1-40 lowercase letters, digits or '-', starting with a letter and not ending with '-' "
        "(VM and TPU names)",
    ),
}
# Whole numbers and their ranges: (lowest, highest, what).
_NUMBERS = {
    "boot_disk_gb": (10, 65536, "GB of boot disk"),
    "port": (1024, 65535, "a TCP port"),
}
OVERHEAD_SECONDS_MAX = 86400.0  # a day to create, install and delete is no estimate


def check(raw: dict, where: str) -> None:
    """UsageError for the first setting of RAW (a cloud: mapping) outside its format."""
    for key, (pattern, rule) in _RULES.items():
        value = raw.get(key)
        if value is None or (key == "project" and value == ""):
            continue
        if not isinstance(value, str) or pattern.fullmatch(value) is None:
            raise errors.UsageError(
                f"{where}cloud.{key}={ascii(value)[:120]} is refused; accepted: {rule}"
            )
    for key, (low, high, what) in _NUMBERS.items():
        value = raw.get(key)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise errors.UsageError(
                f"{where}cloud.{key}={ascii(value)[:60]} is refused; accepted: a whole number "
                f"of {what} from {low} to {high}"
            )
    value = raw.get("overhead_seconds")
    if value is not None and (
        not isinstance(value, (int, float))
        or isinstance(value, bool)
        or not 0 <= value <= OVERHEAD_SECONDS_MAX
    ):
        raise errors.UsageError(
            f"{where}cloud.overhead_seconds={ascii(value)[:60]} is refused; accepted: seconds "
            f"from 0 to {OVERHEAD_SECONDS_MAX:g}"
        )
