"""A local Google Cloud Storage server for TensorFlow's own gs:// file system.

TensorFlow's GCS file system talks to fixed hosts (www.googleapis.com,
storage.googleapis.com) and has no endpoint override, so the only way to
test the real gs:// code path offline is to answer those hosts locally.
This module does it without root: an HTTPS proxy (named in HTTPS_PROXY,
which TensorFlow's libcurl and google-cloud-storage's `requests` both
honour) accepts CONNECT to any host, presents a self-signed certificate for
*.googleapis.com (trusted through CURL_CA_BUNDLE / REQUESTS_CA_BUNDLE) and
serves the requests inside the tunnel with gcp-storage-emulator's handler.

Two emulator quirks are fixed here:
TensorFlow sends `Content-Length` *and* `Transfer-Encoding: chunked`, and the
emulator would store the chunk framing as data; `gfile.makedirs` uploads an
empty body, which the emulator would answer with a 500.  The emulator also
hands out `http://` resumable-upload locations; they are rewritten to https.

Faults can be injected (`fail(...)`): a 403 for a denied request, or a
number of 503s that a client is expected to retry; latency (`delay(...)`):
matching requests wait before they are answered, as a far-away bucket does;
and a frozen server (`pause()` until `resume()`): every request waits, as
when a bucket stops answering (or the server process is stopped with SIGSTOP).

Run it by hand:  python -m tpubench.testing.local_gcs --bucket=my-bucket
prints the environment to export, then serves until Ctrl-C or SIGTERM.  Its
certificate, key and `gcs.env` live in a state directory (--state_dir, by
default the user cache's `local-gcs/`), never in the working directory, and
are removed when the server stops; a directory left by a server that was
killed outright is removed at the next start, with a line saying so.
`--print_env` waits for a running server and prints its `export` lines.
"""

from __future__ import annotations

import http.server
import logging
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
from http import HTTPStatus

from tpubench.testing import gcs_handler

ENV_TOKEN = "local-gcs-test-token"
_HOSTS = ("www.googleapis.com", "storage.googleapis.com", "*.googleapis.com")


def missing_requirements() -> str | None:
    """Why the server cannot run here, or None when it can."""
    if shutil.which("openssl") is None:
        return "openssl is not installed (needed to make the test certificate)"
    try:
        import gcp_storage_emulator  # noqa: F401
    except ImportError:
        return "gcp-storage-emulator is not installed (pip install -e '.[dev]')"
    return None


def _patch_emulator():
    """Fixes the two body-reading quirks of gcp-storage-emulator (idempotent)."""
    from gcp_storage_emulator import server as emu

    if getattr(emu, "_tpubench_patched", False):
        return
    original_read_data = emu._read_data

    def read_raw(handler):
        # Chunked framing wins over Content-Length (RFC 9112 6.3): TensorFlow
        # sends both, and the length then counts the framing bytes.
        encoding = handler.headers.get("Transfer-Encoding", "")
        if encoding.lower() == "chunked":
            body = b""
            while True:
                line = handler.rfile.readline().strip().split(b";")[0]
                size = int(line, 16) if line else 0
                if size == 0:
                    handler.rfile.readline()
                    return body
                body += handler.rfile.read(size)
                handler.rfile.readline()
        length = handler.headers.get("Content-Length")
        return handler.rfile.read(int(length)) if length else b""

    def read_data(handler, query):
        data = original_read_data(handler, query)
        if data is None and query.get("uploadType") == ["media"]:
            return b""  # an empty object (gfile.makedirs writes one)
        return data

    emu._read_raw_data = read_raw
    emu._read_data = read_data
    _add_generation_preconditions(emu)
    emu._tpubench_patched = True


def _add_generation_preconditions(emu):
    """`ifGenerationMatch` on uploads and deletes, which the emulator ignores: a
    mismatch is HTTP 412, as GCS answers (0 means "only if no object is there")."""

    from gcp_storage_emulator.exceptions import NotFound
    from gcp_storage_emulator.handlers import objects

    def holds(request, storage, name) -> bool:
        want = request.query.get("ifGenerationMatch")
        if not want or name is None:
            return True
        try:
            current = str(storage.get_file_obj(request.params["bucket_name"], name)["generation"])
        except NotFound:
            current = "0"
        if current == want[0]:
            return True
        request_failed = {"error": {"code": 412, "message": "conditionNotMet"}}
        request.response.status = HTTPStatus.PRECONDITION_FAILED
        request.response.json(request_failed)
        return False

    def insert(request, response, storage, *args, **kwargs):
        name = (request.query.get("name") or [None])[0]
        if name is None and request.query.get("uploadType") == ["multipart"]:
            name = request.data["meta"].get("name")
        request.response = response
        if holds(request, storage, name):
            return objects.insert(request, response, storage, *args, **kwargs)

    def delete(request, response, storage, *args, **kwargs):
        request.response = response
        if holds(request, storage, request.params["object_id"]):
            return objects.delete(request, response, storage, *args, **kwargs)

    for _, handlers in emu.HANDLERS:
        for method, handler in list(handlers.items()):
            if handler is objects.insert:
                handlers[method] = insert
            elif handler is objects.delete:
                handlers[method] = delete


class LocalGCS:
    """A local GCS server reached through an HTTPS proxy; see the module doc."""

    def __init__(self, workdir: str | None = None, buckets=("tpubench-test",)):
        reason = missing_requirements()
        if reason:
            raise RuntimeError(reason)
        self._owns_workdir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix="local-gcs-")
        self.buckets = tuple(buckets)
        self.faults = gcs_handler.Faults()
        self._proxy = None

    def start(self) -> LocalGCS:

        from gcp_storage_emulator.handlers import buckets as emu_buckets
        from gcp_storage_emulator.storage import Storage

        _patch_emulator()
        logging.getLogger("gcp_storage_emulator").setLevel(logging.CRITICAL)  # 404s are normal
        self.cert = os.path.join(self.workdir, "local-gcs.pem")
        key = os.path.join(self.workdir, "local-gcs.key")
        san = ",".join(f"DNS:{h}" for h in _HOSTS)
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "7"]
            + ["-keyout", key, "-out", self.cert, "-subj", "/CN=local-gcs"]
            + ["-addext", f"subjectAltName={san}"],
            check=True,
            capture_output=True,
        )
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(self.cert, key)
        storage = Storage(use_memory_fs=True, data_dir=os.path.join(self.workdir, "data"))
        for name in self.buckets:
            emu_buckets.create_bucket(name, storage)
        inner = gcs_handler.make(storage, self.faults)

        class Proxy(http.server.BaseHTTPRequestHandler):
            def do_CONNECT(self):
                self.send_response(200, "Connection established")
                self.end_headers()
                self.wfile.flush()
                try:
                    conn = tls.wrap_socket(self.connection, server_side=True)
                    inner(conn, self.client_address, self.server)
                except (ssl.SSLError, OSError):
                    pass
                self.close_connection = True

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
        server.daemon_threads = True
        self._proxy = server
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.port = server.server_address[1]
        self.storage = storage
        return self

    def env(self) -> dict[str, str]:
        """Environment under which TensorFlow and google-cloud-storage reach this server."""
        proxy = f"http://127.0.0.1:{self.port}"
        return {
            "HTTPS_PROXY": proxy,
            "https_proxy": proxy,
            "NO_PROXY": "",
            "no_proxy": "",
            "CURL_CA_BUNDLE": self.cert,
            "REQUESTS_CA_BUNDLE": self.cert,
            "GOOGLE_AUTH_TOKEN_FOR_TESTING": ENV_TOKEN,
            "NO_GCE_CHECK": "true",
            # Fast retries so fault tests finish quickly; still real retries.
            "GCS_RETRY_CONFIG_INIT_DELAY_TIME_US": "10000",
            "GCS_RETRY_CONFIG_MAX_DELAY_TIME_US": "200000",
        }

    def fail(self, pattern: str, status: int, times: int | None = None, method=None):
        """Answers requests whose path matches PATTERN with STATUS (TIMES times, or always)."""
        self.faults.add(pattern, status, times, method)

    def delay(self, pattern: str, seconds: float, method=None):
        """Answers requests whose path matches PATTERN only after SECONDS (latency)."""
        self.faults.add_delay(pattern, seconds, method)

    def pause(self):
        """Stops answering: every request waits until `resume()` (a bucket that froze)."""
        self.faults.pause()

    def resume(self):
        self.faults.resume()

    def stop(self):
        self.faults.resume()
        if self._proxy is not None:
            self._proxy.shutdown()
            self._proxy.server_close()
            self._proxy = None
        if self._owns_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


if __name__ == "__main__":  # the server process's command line: local_gcs_server.py
    from tpubench.testing import local_gcs_server

    sys.exit(local_gcs_server.main())
