"""Object-storage URLs: which schemes replay-tui reads and writes, how a URL may be shown, and the fsspec
filesystem behind one. Credentials never travel in a URL (refused) and never reach a message.

Here, below every layer that touches object storage: the store reads URLs (``store/storage.py``) and the
recorder ships closed journals to one (``journal/shipping.py``).
"""

from __future__ import annotations

import os
import urllib.parse
from typing import Any

from .errors import JournalError

SCHEMES = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "http", "https", "file"})
#: The extra that brings each scheme's fsspec implementation.
EXTRAS = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "az": "azure",
    "abfs": "azure",
    "abfss": "azure",
    "http": "http",
    "https": "http",
}
#: Query parameters that carry credentials (pre-signed URLs, SAS tokens): refused on the command line.
_SECRET_QUERY = frozenset(
    {
        "x-amz-signature",
        "x-amz-credential",
        "x-amz-security-token",
        "sig",
        "signature",
        "x-goog-signature",
        "x-goog-credential",
        "token",
        "access_token",
        "sv",
        "se",
    }
)


class StorageError(JournalError):
    """A URL that cannot be read: the message names the URL (without credentials) and what went wrong."""


def is_url(text: str) -> bool:
    """True for ``scheme://…`` with a scheme this module reads."""
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.lower() in SCHEMES


def shown(url: str) -> str:
    """The URL as it may be printed: no userinfo, no query, no fragment."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def check_url(url: str) -> None:
    """Refuse URLs that carry credentials: they belong in the environment or config files."""
    parts = urllib.parse.urlsplit(url)
    if "@" in parts.netloc:
        raise StorageError(
            f"{shown(url)}: the URL carries credentials (user:secret@); give them through the environment "
            "or the store's config files instead, never on the command line"
        )
    keys = {key.lower() for key, _ in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)}
    if keys & _SECRET_QUERY:
        raise StorageError(
            f"{shown(url)}: the URL carries a signature or token in its query; give credentials through the "
            "environment or the store's config files instead, never on the command line"
        )


def filesystem(url: str) -> tuple[Any, str]:
    """(fsspec filesystem, path inside it) for ``url``; a clear error when the extra is missing."""
    check_url(url)
    try:
        import fsspec
    except ImportError:
        raise StorageError(
            f"{shown(url)}: reading URLs needs fsspec: pip install 'replay-tui[s3]' (or gcs, azure, http)"
        ) from None
    scheme = url.partition("://")[0].lower()
    try:
        fs, path = fsspec.core.url_to_fs(url)
        return fs, str(path)
    except ImportError as error:
        extra = EXTRAS.get(scheme, scheme)
        raise StorageError(
            f"{shown(url)}: no client for {scheme}:// URLs ({error}); pip install 'replay-tui[{extra}]'"
        ) from None
    except (ValueError, TypeError) as error:
        raise StorageError(f"{shown(url)}: not a URL fsspec can open: {error}") from None


def explain(url: str, error: BaseException) -> StorageError:
    """Translate a client error into one line naming the URL; never echoes credentials."""
    status = http_status(error)
    text = str(error).strip() or type(error).__name__
    lowered = text.lower()
    if status in (401, 403):
        what = "access denied (check the credentials in the environment or the store's config files)"
    elif (
        isinstance(error, FileNotFoundError) or "nosuchbucket" in lowered or "nosuchkey" in lowered or "404" in lowered
    ):
        missing_bucket = "nosuchbucket" in lowered or "bucket does not exist" in lowered
        what = "no such bucket" if missing_bucket else "no such object or prefix"
    elif isinstance(error, PermissionError) or "accessdenied" in lowered or "forbidden" in lowered or "403" in lowered:
        what = "access denied (check the credentials in the environment or the store's config files)"
    else:
        what = f"{type(error).__name__}: {text.splitlines()[0][:200]}"
    for name in ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN"):
        secret = os.environ.get(name)
        if secret:
            what = what.replace(secret, "[REDACTED]")
    return StorageError(f"{shown(url)}: {what}")


def http_status(error: BaseException) -> int | None:
    """The HTTP status behind a client error, looking through the chain (fsspec's HTTP
    client turns a 403 into FileNotFoundError with the response error as its cause)."""
    seen: BaseException | None = error
    for _ in range(5):
        if seen is None:
            return None
        status = getattr(seen, "status", None) or getattr(seen, "status_code", None)
        if isinstance(status, int):
            return status
        seen = seen.__cause__ or seen.__context__
    return None
