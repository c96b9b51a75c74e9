"""A real S3-compatible server (moto's server mode) on loopback, and a 403-answering HTTP server."""

from __future__ import annotations

import http.server
import os
import threading
from pathlib import Path
from typing import Iterator

import pytest

pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")

REPO = Path(__file__).resolve().parents[2]
JOURNALS = REPO / "fixtures" / "journals"


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    # port 0: the server binds a free port itself (a port probed free and bound later can be taken meanwhile
    # by another xdist worker or another test session on the machine)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    _host, port = server.get_host_and_port()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3_env(s3_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Credentials in the environment only (as a user would have them), and a fresh cache."""
    values = {
        "AWS_ENDPOINT_URL": s3_endpoint,
        "AWS_ACCESS_KEY_ID": "testing-key-id",
        "AWS_SECRET_ACCESS_KEY": "testing-secret-value-0123456789",
        "AWS_DEFAULT_REGION": "us-east-1",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    import fsspec

    fsspec.config.conf.clear()
    try:  # s3fs caches filesystem instances (and their listings) per process
        import s3fs

        s3fs.S3FileSystem.clear_instance_cache()
    except (ImportError, AttributeError):
        pass
    return {**os.environ, **values}


@pytest.fixture
def bucket(s3_env: dict[str, str], request: pytest.FixtureRequest) -> str:
    import boto3

    name = "j-" + request.node.name.lower().replace("_", "-")[:40].strip("-")
    client = boto3.client("s3", endpoint_url=s3_env["AWS_ENDPOINT_URL"])
    client.create_bucket(Bucket=name)
    return name


def put(s3_env: dict[str, str], bucket: str, key: str, body: bytes) -> None:
    import boto3

    boto3.client("s3", endpoint_url=s3_env["AWS_ENDPOINT_URL"]).put_object(Bucket=bucket, Key=key, Body=body)


class _Forbidden(http.server.BaseHTTPRequestHandler):
    def do_HEAD(self) -> None:  # noqa: N802 (http.server's naming)
        self.send_response(403)
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        self.send_response(403)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def forbidden_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Forbidden)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/private/run.jsonl"
    finally:
        server.shutdown()
        server.server_close()
