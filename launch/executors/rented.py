"""A renting executor's `cloud:` settings: what every one shares, and what each owns.

Every renting executor reads the shared keys (`COMMON`: the bucket, spot,
the package, the preview's overhead, the name prefix) and declares its own
beside them (`base.CloudExecutor.settings_keys`, `required`, `example`,
`setting_rules` for their formats, `scheme` for its bucket: gs://, s3://).
`read` checks a sweep file's `cloud:` mapping against that declaration and
returns one `Settings`: the shared keys and the GCP executors' keys as
fields, every other key an executor owns in `own` (aws_batch's job_queue).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re

from tpubench_launch import cloud_file, commands, errors, package

# The keys every renting executor reads.
COMMON = (
    "bucket",
    "spot",
    "package",
    "package_index_version",
    "package_sha256",
    "overhead_seconds",
    "name_prefix",
)


@dataclasses.dataclass(frozen=True)
class Settings:
    bucket: str  # SCHEME://... : records under records/, model dirs under model_dirs/
    project: str = ""  # GCP: the project (gcp.py)
    zone: str = ""  # GCP: the zone
    spot: bool = False
    package: str | None = None  # a local wheel/sdist to install (package.py)
    package_index_version: str | None = None  # or this tpubench release from the index
    package_sha256: str | None = None  # the hash the installed file must have
    image_family: str | None = None
    image_project: str | None = None
    tpu_runtime: str | None = None
    boot_disk_gb: int = 100
    overhead_seconds: float = 300.0
    name_prefix: str = "tpubench"
    port: int = 2222
    image: str | None = None  # gke: a container image with tpubench installed
    namespace: str | None = None  # gke: default kubectl's current namespace
    queue: str | None = None  # gke: a Kueue LocalQueue
    install: package.Package | None = None  # what each VM installs (base.CloudExecutor.settings)
    # The keys an executor owns that are no field here (aws_batch: region, job_queue, ...).
    own: dict = dataclasses.field(default_factory=dict, hash=False)

    @property
    def records(self) -> str:
        return self.bucket.rstrip("/") + "/records"

    def model_dir(self, config_id: str) -> str:
        return self.bucket.rstrip("/") + f"/model_dirs/{config_id}"

    @property
    def where(self) -> list[str]:
        return [f"--zone={self.zone}", f"--project={self.project}"]

    @property
    def ssh(self) -> list[str]:
        """Placement plus --quiet: ssh/scp must never wait for an answer (no stdin)."""
        return [*self.where, "--quiet"]


_FIELDS = {f.name for f in dataclasses.fields(Settings)} - {"install", "own"}


def read(sweep, ex, owned: dict[str, tuple[str, str]] | None = None) -> Settings:
    """The sweep file's `cloud:` mapping, checked for EX (a base.CloudExecutor): its
    required keys, its bucket's scheme, and no key only another executor reads.

    Args:
      owned: key -> (executor, what) for the keys only one executor reads
        (`cloud.image` is GKE's): set for another executor, they are refused.

    Raises:
      UsageError: a missing or unknown key, another executor's key, or a
        bucket (or flags.data_dir) not on EX's scheme.
    """
    raw = dict(sweep.cloud)
    cloud_file.check(raw, f"{sweep.path}: ", ex.settings_keys)  # sweep/file.py checked it too
    missing = [k for k in ex.required if not raw.get(k)]
    if missing:
        raise errors.UsageError(
            f"{sweep.path}: --executor={ex.name} needs cloud.{', cloud.'.join(missing)} "
            f"(e.g. {ex.example})"
        )
    for key, (owner, what) in (owned or {}).items():
        if raw.get(key) is not None and ex.name != owner:
            raise errors.UsageError(
                f"{sweep.path}: cloud.{key} is a {what} setting; it needs --executor={owner}"
            )
    unread = [k for k in raw if raw[k] is not None and k not in ex.cloud_keys()]
    if unread:  # a GCP key for aws_batch would be silently ignored: refused instead
        raise errors.UsageError(
            f"{sweep.path}: --executor={ex.name} does not read cloud.{unread[0]}; it reads "
            f"{', '.join(ex.cloud_keys())}"
        )
    if "spot" in raw and not isinstance(raw["spot"], bool):
        raise errors.UsageError(f"{sweep.path}: cloud.spot={raw['spot']!r} must be true or false")
    bucket = str(raw["bucket"])
    hint = commands.gs_typo_hint(bucket) or commands.gs_problem(bucket)
    if hint and ex.scheme == "gs://":
        raise errors.UsageError(f"{sweep.path}: cloud.bucket={hint}")
    if not bucket.startswith(ex.scheme) or len(bucket) <= len(ex.scheme):
        raise errors.UsageError(
            f"{sweep.path}: cloud.bucket={bucket} must be a {ex.scheme} path (--executor="
            f"{ex.name}'s machines write there)"
        )
    data_dir = sweep.configs[0].fixed_flags.get("data_dir") if sweep.configs else None
    if data_dir and not str(data_dir).startswith(ex.scheme):
        raise errors.UsageError(
            f"{sweep.path}: flags.data_dir={data_dir} must be on {ex.scheme} for "
            f"--executor={ex.name}"
        )
    given = {k: v for k, v in raw.items() if v is not None}
    own = {k: v for k, v in given.items() if k not in _FIELDS}
    return Settings(**{k: v for k, v in given.items() if k in _FIELDS}, own=own)


def vm_name(s: Settings, sweep_name: str, config_id: str, suffix: str = "") -> str:
    """A valid, deterministic machine or job name: lowercase letters, digits, dashes, <= 63."""
    slug = re.sub(r"[^a-z0-9-]+", "-", sweep_name.lower()).strip("-") or "sweep"
    # A grid id's own hex; a `runs:` label (any letters, '_' and '.') by its hash.
    if re.match(r"^cfg-[0-9a-f]{8}", config_id):
        short = config_id[4:12]
    else:
        short = hashlib.sha256(config_id.encode()).hexdigest()[:8]
    tail = "-" + short + (f"-{suffix}" if suffix else "")
    head = f"{s.name_prefix}-{slug}"[: 63 - len(tail)].rstrip("-")
    if not head[:1].isalpha():
        head = "t" + head[: 62 - len(tail)]
    return head + tail
