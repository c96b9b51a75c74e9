"""An HTTP proxy on loopback in front of moto's S3 server that fails, holds or passes each upload.

Every request is forwarded as it came (method, path, headers, body); an upload (a PUT, or the POSTs of
a multipart upload) first asks ``policy(number)``, ``number`` counting uploads from 1: ``None`` passes
it on, an int answers that HTTP status with an S3 error body instead (moto never sees it).
``gate``, when cleared, holds uploads until it is set again.
"""

from __future__ import annotations

import http.client
import http.server
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


class UploadProxy:
    def __init__(self, upstream: str, policy: Callable[[int], int | None] = lambda number: None) -> None:
        parts = urllib.parse.urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.policy = policy
        self.gate = threading.Event()
        self.gate.set()
        self.uploads = 0
        self.failed = 0
        self.passed = 0
        self._lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                proxy.forward(self)

            do_HEAD = do_PUT = do_POST = do_DELETE = do_GET  # noqa: N815

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def forward(self, request: http.server.BaseHTTPRequestHandler) -> None:
        body = _read_body(request)
        upload = request.command == "PUT" or (request.command == "POST" and "uploadId" in request.path)
        if upload:
            with self._lock:
                self.uploads += 1
                number = self.uploads
            self.gate.wait(60)
            status = self.policy(number)
            if status is not None:
                with self._lock:
                    self.failed += 1
                _answer(
                    request,
                    status,
                    b"<Error><Code>InternalError</Code><Message>refused by the test proxy</Message></Error>",
                )
                return
            with self._lock:
                self.passed += 1
        connection = http.client.HTTPConnection(*self.upstream, timeout=60)
        try:
            headers = {
                k: v
                for k, v in request.headers.items()
                if k.lower() not in HOP_BY_HOP and k.lower() != "content-length"
            }
            headers["Content-Length"] = str(len(body))
            connection.request(
                request.command,
                request.path,
                body=body if body or request.command in ("PUT", "POST") else None,
                headers=headers,
            )
            response = connection.getresponse()
            data = response.read()
            request.send_response(response.status, response.reason)
            for key, value in response.getheaders():
                if key.lower() not in HOP_BY_HOP and key.lower() != "content-length":
                    request.send_header(key, value)
            # a HEAD answer's length is the object's, not of its (empty) body
            request.send_header(
                "Content-Length",
                response.getheader("Content-Length", "0") if request.command == "HEAD" else str(len(data)),
            )
            request.end_headers()
            if request.command != "HEAD":
                request.wfile.write(data)
        finally:
            connection.close()

    @contextmanager
    def running(self) -> Iterator[UploadProxy]:
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.gate.set()
            self.server.shutdown()
            self.server.server_close()


def _read_body(request: http.server.BaseHTTPRequestHandler) -> bytes:
    if request.headers.get("Transfer-Encoding", "").lower() == "chunked":
        chunks = []
        while True:
            size = int(request.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while request.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(chunks)
            chunks.append(request.rfile.read(size))
            request.rfile.readline()
    length = int(request.headers.get("Content-Length") or 0)
    return request.rfile.read(length) if length else b""


def _answer(request: http.server.BaseHTTPRequestHandler, status: int, body: bytes) -> None:
    request.send_response(status)
    request.send_header("Content-Type", "application/xml")
    request.send_header("Content-Length", str(len(body)))
    request.end_headers()
    request.wfile.write(body)
