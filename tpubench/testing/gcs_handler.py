"""The local GCS server's request handler: the emulator's, with injected faults and delays.

`Faults` holds what tests inject (a 403 for a denied request, 503s a client
should retry, latency, a frozen server); `make` builds the handler class that
answers through them (testing/local_gcs.py serves it).
"""

from __future__ import annotations

import json
import re
import threading
import time


class Faults:
    """Injected failures: (method, path regex, status, remaining count or None),
    and delays: (method, path regex, seconds)."""

    def __init__(self):
        self._rules: list[list] = []
        self._delays: list[tuple] = []
        self._lock = threading.Lock()
        self.hits: list[tuple[str, str, int]] = []
        self.delayed = 0  # requests that waited
        self._answering = threading.Event()  # cleared while paused
        self._answering.set()

    def add(self, pattern: str, status: int, times: int | None, method: str | None):
        with self._lock:
            self._rules.append([method, re.compile(pattern), status, times])

    def add_delay(self, pattern: str, seconds: float, method: str | None):
        with self._lock:
            self._delays.append((method, re.compile(pattern), float(seconds)))

    def pause(self) -> None:
        self._answering.clear()

    def resume(self) -> None:
        self._answering.set()

    def clear(self):
        self._answering.set()
        with self._lock:
            self._rules.clear()
            self._delays.clear()
            self.hits.clear()
            self.delayed = 0

    def wait(self, method: str, path: str) -> None:
        """Sleeps for the first delay rule matching METHOD and PATH, if any (and while paused)."""
        self._answering.wait()
        with self._lock:
            seconds = next(
                (s for want, regex, s in self._delays
                 if (want is None or want == method) and regex.search(path)),
                0.0,
            )  # fmt: skip
            if seconds:
                self.delayed += 1
        if seconds:
            time.sleep(seconds)

    def match(self, method: str, path: str) -> int | None:
        with self._lock:
            for rule in self._rules:
                want, regex, status, times = rule
                if (want is None or want == method) and regex.search(path):
                    if times is not None:
                        if times <= 0:
                            continue
                        rule[3] = times - 1
                    self.hits.append((method, path, status))
                    return status
        return None


def make(storage, faults):
    """The emulator's request handler class over STORAGE, answering through FAULTS."""
    from gcp_storage_emulator import server as emu

    class Handler(emu.RequestHandler):
        """The emulator's handler, with faults and https upload locations."""

        protocol_version = "HTTP/1.0"

        def __init__(self, *args, **kwargs):
            super().__init__(storage, *args, **kwargs)

        def parse_request(self):
            # libcurl asks `Expect: 100-continue` before an upload body and waits a
            # second for the answer; GCS gives it, the HTTP/1.0 emulator does not.
            ok = super().parse_request()
            if ok and self.headers.get("Expect", "").lower() == "100-continue":
                self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                self.wfile.flush()
            return ok

        def send_header(self, keyword, value):
            if keyword.lower() == "location" and value.startswith("http://"):
                value = "https://" + value[len("http://") :]
            super().send_header(keyword, value)

        def _fault(self, method) -> bool:
            faults.wait(method, self.path)
            status = faults.match(method, self.path)
            if status is None:
                return False
            length = int(self.headers.get("Content-Length") or 0)
            if length and "chunked" not in self.headers.get("Transfer-Encoding", "").lower():
                self.rfile.read(length)
            reason = "does not have storage.objects access" if status == 403 else "injected"
            body = json.dumps({"error": {"code": status, "message": f"{reason} ({self.path})"}})
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body.encode())
            self.close_connection = True
            return True

        def do_GET(self):
            if not self._fault("GET"):
                super().do_GET()

        def do_POST(self):
            if not self._fault("POST"):
                super().do_POST()

        def do_PUT(self):
            if not self._fault("PUT"):
                super().do_PUT()

        def do_DELETE(self):
            if not self._fault("DELETE"):
                super().do_DELETE()

        def do_PATCH(self):
            if not self._fault("PATCH"):
                super().do_PATCH()

    return Handler
