"""What the Google Cloud executors (gce, tpu-vm, gke, skypilot) share: `Gcp`, their base.

Their `cloud:` keys (a project, a zone, boot images, a TPU runtime, GKE's
image, namespace and queue), a gs:// bucket, `gcloud` checked on PATH, and
the records copied back with `gcloud storage rsync`.  A renting executor of
another cloud subclasses `base.CloudExecutor` with its own (aws_batch.py).
"""

from __future__ import annotations

import shutil
from typing import ClassVar

from tpubench_launch import errors
from tpubench_launch.executors import base, rented

# Every key a GCP executor may read; gke's own (image, namespace, queue) only gke reads.
SETTINGS = (
    "project",
    "zone",
    "bucket",
    "spot",
    "package",
    "package_index_version",
    "package_sha256",
    "image_family",
    "image_project",
    "tpu_runtime",
    "boot_disk_gb",
    "overhead_seconds",
    "name_prefix",
    "port",
    "image",
    "namespace",
    "queue",
)
assert set(rented.COMMON) <= set(SETTINGS)
# What a VM executor cannot do without; an executor declares its own.
REQUIRED = ("project", "zone", "bucket")
EXAMPLE = "cloud: {project: my-project, zone: us-central1-a, bucket: gs://my-bucket/tb}"


def check_gcloud() -> None:
    if shutil.which("gcloud") is None:
        raise errors.CloudError(
            "gcloud not found on PATH: install the Google Cloud CLI and run `gcloud auth "
            "login`, or add --dry-run to print the commands"
        )


def rsync_records(config, s: rented.Settings, results_dir: str) -> list[str]:
    """Copies the bucket's records here; a tune's trials lie one folder down (tune-ID/)."""
    deep = ["--recursive"] if config is not None and config.command == "tune" else []
    return ["gcloud", "storage", "rsync", *deep, s.records, results_dir]


class Gcp(base.CloudExecutor):
    """A Google Cloud executor: GCP's keys, a gs:// bucket, gcloud, `gcloud storage rsync`."""

    providers = ("gcp",)
    settings_keys: ClassVar[tuple[str, ...]] = SETTINGS
    required = REQUIRED
    example = EXAMPLE
    scheme = "gs://"

    def check_tools(self) -> None:
        check_gcloud()

    def copy_back(self, config, settings, results_dir: str) -> list[str]:
        return rsync_records(config, settings, results_dir)
