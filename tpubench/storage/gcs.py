"""Google Cloud Storage through google-cloud-storage: uploads with metadata,
listings, reads that need no TensorFlow, and access checks before training.

TensorFlow's own gs:// file system (tf.io.gfile) carries the training data,
checkpoints and summaries; this module does what gfile cannot: attach
metadata to objects, list runs without TensorFlow (reports), and check up
front that the credentials can read and write the buckets a run names, so a
missing permission fails in one line before any training starts.

Credentials: Application Default Credentials (`gcloud auth
application-default login`, GOOGLE_APPLICATION_CREDENTIALS, or the VM's
service account).  GOOGLE_AUTH_TOKEN_FOR_TESTING, the bearer-token variable
TensorFlow's GCS file system honours, is honoured here too so both clients
authenticate the same way against a test server.  Transient errors (429,
5xx, dropped connections) are retried with exponential backoff.
"""

from __future__ import annotations

import os
import secrets

from tpubench.core import errors, names

_DEADLINE_SECS = 60.0


def is_gcs(path: str | None) -> bool:
    return bool(path) and str(path).startswith("gs://")


def typo_hint(value: str) -> str | None:
    """A hint when VALUE looks like a gs:// URL with the slashes wrong (`gs:/b/x`), else None."""
    v = str(value)
    if v[:3].lower() != "gs:" or (v.startswith("gs://") and v[5:6] not in ("", "/")):
        return None
    fixed = "gs://" + v[3:].lstrip("/")
    return f"{v} is not a gs:// URL (two slashes after gs:); did you mean {fixed}?"


def parse(url: str) -> tuple[str, str]:
    """'gs://bucket/a/b' -> ('bucket', 'a/b'); a malformed URL is a UsageError."""
    if not is_gcs(url):
        raise errors.UsageError(f"{url!r} is not a gs:// URL (expected gs://BUCKET/PATH)")
    bucket, _, name = url[len("gs://") :].partition("/")
    if not bucket or "*" in bucket:
        raise errors.UsageError(f"{url!r} names no bucket (expected gs://BUCKET/PATH)")
    problem = names.gcs_problem(url)  # before a call that would wait and blame the network
    if problem:
        raise errors.UsageError(problem)
    return bucket, name


def _client():
    try:
        from google.cloud import storage
    except ImportError:  # pragma: no cover - a base dependency
        raise errors.UsageError(
            "gs:// needs google-cloud-storage: pip install google-cloud-storage"
        ) from None
    token = os.environ.get("GOOGLE_AUTH_TOKEN_FOR_TESTING")
    if token:
        from google.oauth2 import credentials

        creds = credentials.Credentials(token)
        project = os.environ.get("GOOGLE_CLOUD_PROJECT", "-")
        return storage.Client(project=project, credentials=creds)
    import google.auth
    from google.auth import exceptions as auth_exceptions

    try:
        creds, project = google.auth.default()
    except auth_exceptions.DefaultCredentialsError:
        raise errors.DataError(
            "no Google Cloud credentials for gs://: run `gcloud auth application-default "
            "login`, set GOOGLE_APPLICATION_CREDENTIALS to a key file, or run on a VM with "
            "a service account"
        ) from None
    return storage.Client(project=project or "-", credentials=creds)


def _retry():
    from google.api_core import retry as retries
    from google.cloud.storage import retry as storage_retry

    return retries.Retry(
        predicate=storage_retry._should_retry,  # 408/429/5xx and dropped connections
        initial=0.2,
        maximum=5.0,
        multiplier=2.0,
        timeout=_DEADLINE_SECS,
    )


def _error(e: Exception, url: str, action: str) -> errors.TpubenchError:
    """One line for a failed GCS call, naming the URL and what to check."""
    from google.api_core import exceptions as api

    bucket = parse(url)[0]
    if isinstance(e, errors.TpubenchError):
        return e
    if isinstance(e, api.NotFound):
        what = "bucket" if "bucket" in str(e).lower() else "object"
        if what == "bucket":
            return errors.DataError(f"cannot {action} {url}: bucket gs://{bucket} does not exist")
        return errors.DataError(f"cannot {action} {url}: no such object")
    if isinstance(e, (api.Forbidden, api.Unauthorized)):
        return errors.DataError(
            f"cannot {action} {url}: access denied (HTTP {e.code}); grant the credentials' "
            f"account access to gs://{bucket} (e.g. roles/storage.objectAdmin)"
        )
    if isinstance(e, api.GoogleAPICallError):
        return errors.DataError(f"cannot {action} {url}: HTTP {e.code} {e.message}")
    return errors.DataError(f"cannot {action} {url}: {type(e).__name__}: {str(e)[:200]}")


def _call(url: str, action: str, fn):
    try:
        return fn()
    except errors.TpubenchError:
        raise
    except Exception as e:  # noqa: BLE001 - google.api_core, requests, auth errors
        raise _error(e, url, action) from None


def read_bytes(url: str, limit: int | None = None) -> bytes:
    """The bytes of one object; with LIMIT, an object larger than LIMIT is a UsageError."""
    bucket, name = parse(url)
    client = _client()
    if limit is None:
        return _call(
            url,
            "read",
            lambda: client.bucket(bucket).blob(name).download_as_bytes(retry=_retry()),
        )
    blob = _call(url, "stat", lambda: client.bucket(bucket).get_blob(name, retry=_retry()))
    if blob is None:
        raise errors.DataError(f"cannot read {url}: no such object")
    if blob.size is not None and blob.size > limit:
        raise errors.UsageError(f"{url} holds {blob.size:,} bytes, more than {limit:,}")
    return _call(
        url, "read", lambda: client.bucket(bucket).blob(name).download_as_bytes(retry=_retry())
    )


def metadata(url: str) -> dict:
    """The custom metadata of one object ({} when it has none)."""
    bucket, name = parse(url)
    client = _client()
    blob = _call(url, "stat", lambda: client.bucket(bucket).get_blob(name, retry=_retry()))
    if blob is None:
        raise errors.DataError(f"cannot stat {url}: no such object")
    return dict(blob.metadata or {})


def list_objects(prefix_url: str, suffix: str = "") -> list[str]:
    """Full gs:// URLs of the objects under PREFIX_URL ending in SUFFIX, sorted."""
    bucket, prefix = parse(prefix_url)
    if prefix and not prefix.endswith("/"):
        prefix += "/"
    client = _client()

    def names():
        blobs = client.list_blobs(bucket, prefix=prefix or None, retry=_retry())
        return [b.name for b in blobs]

    return sorted(
        f"gs://{bucket}/{n}" for n in _call(prefix_url, "list", names) if n.endswith(suffix)
    )


def write_bytes(url: str, data: bytes, content_type: str, meta: dict | None = None) -> str:
    """Uploads DATA as one object (visible only once complete) with METADATA."""
    bucket, name = parse(url)
    client = _client()

    def upload():
        blob = client.bucket(bucket).blob(name)
        blob.metadata = {k: str(v) for k, v in (meta or {}).items()}
        blob.upload_from_string(data, content_type=content_type, retry=_retry())

    _call(url, "write", upload)
    return url


def create_exclusive(url: str, data: bytes) -> int | None:
    """Creates URL holding DATA only if no object is there; its generation, or None if one was."""
    return _write_if_generation(url, data, 0, retry=_retry())


def read_generation(url: str) -> tuple[bytes, int] | None:
    """(bytes, generation) of URL, or None when there is no such object."""
    bucket, name = parse(url)
    client = _client()

    def read():
        blob = client.bucket(bucket).get_blob(name, retry=_retry())
        if blob is None:
            return None
        fresh = client.bucket(bucket).blob(name)  # by name, not by the listing's media link
        data = fresh.download_as_bytes(if_generation_match=blob.generation, retry=_retry())
        return data, blob.generation

    return _call(url, "read", read)


def replace_if_generation(url: str, data: bytes, generation: int) -> int | None:
    """Overwrites URL only while it is still GENERATION; the new generation, or None."""
    return _write_if_generation(url, data, generation)


def _write_if_generation(url: str, data: bytes, generation: int, **kw) -> int | None:
    """Writes JSON DATA to URL if its generation is GENERATION (0: no object); the new
    generation, or None when the precondition failed."""
    from google.api_core import exceptions as api

    bucket, name = parse(url)
    client = _client()

    def upload():
        blob = client.bucket(bucket).blob(name)
        try:
            blob.upload_from_string(
                data, content_type="application/json", if_generation_match=generation, **kw
            )
        except api.PreconditionFailed:
            return None
        return blob.generation

    return _call(url, "write", upload)


def delete_if_generation(url: str, generation: int) -> bool:
    """Deletes URL only while it is still GENERATION; whether it was deleted."""
    from google.api_core import exceptions as api

    bucket, name = parse(url)
    client = _client()

    def delete():
        try:
            client.bucket(bucket).blob(name).delete(if_generation_match=generation)
        except (api.PreconditionFailed, api.NotFound):
            return False
        return True

    return _call(url, "delete", delete)


def upload_file(path: str, url: str, meta: dict | None = None) -> str:
    bucket, name = parse(url)
    client = _client()

    def upload():
        blob = client.bucket(bucket).blob(name)
        blob.metadata = {k: str(v) for k, v in (meta or {}).items()}
        blob.upload_from_filename(path, retry=_retry())

    _call(url, "write", upload)
    return url


def check_access(url: str, write: bool) -> None:
    """Fails in one line unless the credentials can list (and write) under URL.

    A write check uploads and deletes a small marker object, since bucket
    IAM cannot be read with object-level permissions alone.
    """
    bucket, name = parse(url)
    client = _client()

    def probe():
        b = client.bucket(bucket)
        if not b.exists(retry=_retry()):
            raise errors.DataError(
                f"bucket gs://{bucket} does not exist (named by {url}); create it with "
                f"`gcloud storage buckets create gs://{bucket}` or fix the URL"
            )
        prefix = (name.rstrip("/") + "/") if name else None
        list(client.list_blobs(bucket, prefix=prefix, max_results=1, retry=_retry()))
        if write:
            marker = f"{prefix or ''}.tpubench-access-check-{secrets.token_hex(4)}"
            blob = b.blob(marker)
            blob.upload_from_string(b"", retry=_retry())
            blob.delete(retry=_retry())

    _call(url, "write to" if write else "read", probe)
