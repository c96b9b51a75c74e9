"""Signed seals: an Ed25519 signature over the chain head, so a rewritten chain is caught.

The hash chain alone shows an edit only to someone who kept the original hashes: a
forger who rewrites an event can re-hash it and every event after it. A seal is an
event (``run.sealed`` after the last event of a run, or ``chain.checkpoint`` every N
events) whose payload signs the chain head before it with a private key only the
recorder holds. Whoever has the public key can tell a sealed journal from a forgery.

What is signed (the bytes of the signature's message) is the RFC 8785 form of::

    {"purpose": "replay-tui chain seal v1", "kind": <the seal's kind>, "run_id": ...,
     "head_seq": <seq of the event before the seal>, "head_hash": <its event_hash>,
     "key_id": ...}

``kind`` is signed so a checkpoint cannot be relabelled as the final seal of a cut
journal. ``key_id`` is ``"ed25519:"`` + the first 16 hex digits of sha256 of the raw
32-byte public key. The seal event is itself in the hash chain (its prev_event_hash
is head_hash), so journals without seals stay valid and nothing else changes.
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from .canonical import canonical_json
from .errors import JournalOpenError
from .model import CHAIN_CHECKPOINT, RUN_SEALED, SEAL_KINDS

__all__ = ["CHAIN_CHECKPOINT", "RUN_SEALED", "SEAL_KINDS", "Signer", "generate_key_pair", "key_id_of"]

ALGORITHM = "ed25519"
PURPOSE = "replay-tui chain seal v1"


class KeyFileError(JournalOpenError):
    """A key file that is missing or is not an Ed25519 key of the expected kind."""


def key_id_of(public_key: Ed25519PublicKey) -> str:
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return f"{ALGORITHM}:{hashlib.sha256(raw).hexdigest()[:16]}"


def signed_message(kind: str, run_id: str, head_seq: int, head_hash: str, key_id: str) -> bytes:
    """The exact bytes a seal signs (see the module docstring)."""
    return canonical_json(
        {
            "purpose": PURPOSE,
            "kind": kind,
            "run_id": run_id,
            "head_seq": head_seq,
            "head_hash": head_hash,
            "key_id": key_id,
        }
    )


@dataclass(frozen=True)
class Signer:
    """Makes seal payloads with one private key (the harness writer holds one)."""

    private_key: Ed25519PrivateKey

    @property
    def key_id(self) -> str:
        return key_id_of(self.private_key.public_key())

    def seal_payload(self, kind: str, run_id: str, head_seq: int, head_hash: str) -> dict[str, Any]:
        key_id = self.key_id
        signature = self.private_key.sign(signed_message(kind, run_id, head_seq, head_hash, key_id))
        return {
            "algorithm": ALGORITHM,
            "key_id": key_id,
            "head_seq": head_seq,
            "head_hash": head_hash,
            "signature": base64.b64encode(signature).decode("ascii"),
        }


def seal_structure_error(seq: int, prev_hash: str | None, payload: dict[str, Any]) -> str | None:
    """What is wrong with a seal that needs no key to see, or None."""
    if payload.get("algorithm") != ALGORITHM:
        return f"the seal's algorithm is {payload.get('algorithm')!r}, expected {ALGORITHM!r}"
    if payload.get("head_seq") != seq - 1 or payload.get("head_hash") != prev_hash:
        return (
            f"the seal says it covers seq {payload.get('head_seq')!r}, but it follows seq {seq - 1} "
            "(a seal signs the chain head right before it)"
        )
    return None


def seal_signature_error(kind: str, run_id: str, payload: dict[str, Any], public_key: Ed25519PublicKey) -> str | None:
    """Check a seal's signature with ``public_key``; the reason it fails, or None."""
    key_id = key_id_of(public_key)
    if payload.get("key_id") != key_id:
        return f"sealed by key {payload.get('key_id')!r}, not by the given key {key_id}"
    try:
        signature = base64.b64decode(str(payload.get("signature", "")), validate=True)
        message = signed_message(kind, run_id, payload["head_seq"], payload["head_hash"], key_id)
        public_key.verify(signature, message)
    except (InvalidSignature, ValueError, KeyError):
        return "the signature does not match the chain head it claims: the chain was rewritten, or the seal forged"
    return None


def generate_key_pair(private_path: Path, public_path: Path) -> str:
    """Write a new key pair (the private key readable by its owner only); returns the key id."""
    private_key = Ed25519PrivateKey.generate()
    private_pem = private_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public_pem = private_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    descriptor = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as private_file:
        private_file.write(private_pem)
    with open(public_path, "xb") as public_file:
        public_file.write(public_pem)
    return key_id_of(private_key.public_key())


def load_private_key(path: str | os.PathLike[str]) -> Signer:
    key = _load(path, private=True)
    assert isinstance(key, Ed25519PrivateKey)
    return Signer(key)


def load_public_key(path: str | os.PathLike[str]) -> Ed25519PublicKey:
    key = _load(path, private=False)
    assert isinstance(key, Ed25519PublicKey)
    return key


def _load(path: str | os.PathLike[str], *, private: bool) -> Ed25519PrivateKey | Ed25519PublicKey:
    what = "private" if private else "public"
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise KeyFileError(f"cannot read the {what} key: {error.strerror or error}", path=str(path)) from None
    try:
        key: Any = (
            serialization.load_pem_private_key(data, password=None)
            if private
            else serialization.load_pem_public_key(data)
        )
    except (ValueError, TypeError) as error:
        hint = " (this looks like a private key: give the .pub file)" if b"PRIVATE KEY" in data and not private else ""
        raise KeyFileError(f"is not a PEM {what} key{hint} ({error})", path=str(path)) from None
    expected = Ed25519PrivateKey if private else Ed25519PublicKey
    if not isinstance(key, expected):
        raise KeyFileError(f"is not an Ed25519 {what} key (as 'replay-tui keygen' writes)", path=str(path))
    return key
