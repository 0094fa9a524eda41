"""Signed receipts (issue 21 item 2): Ed25519 (RFC 8032, via ``cryptography``) over the canonical JSON of the
receipt's fields.

A receipt is a JSON object with :data:`FIELDS` and ``signature`` (base64 of the 64-byte Ed25519 signature of
:func:`leaf_live.core.participation.canonical_json` of the object without ``signature``). ``content_hash`` is
the sha256 of the canonical submission content (:func:`leaf_live.core.participation.content_hash`), so a team
can tie the receipt to exactly what it sent; ``received_at`` is the server's clock. Changing any field, or
the signature, makes :func:`verify_receipt` fail. ``key_id`` is the first 16 hex of the sha256 of the raw
public key, so a verifier can tell which published key to use.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from datetime import UTC
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from leaf_live.core.participation import canonical_json

FIELDS = (
    "receipt_id",
    "team",
    "model_id",
    "round_id",
    "track",
    "content_hash",
    "received_at",
    "due_at",
    "board",
    "n_rows",
    "key_id",
)


class ReceiptError(ValueError):
    """A receipt that does not verify, or a key file that cannot be used; the message says which field."""


def load_or_create_key(path: Path) -> Ed25519PrivateKey:
    """The service's signing key from the PEM (PKCS#8) file ``path``; a new key is written there (mode 0600)
    when the file does not exist. Raises :class:`ReceiptError` for an unreadable or non-Ed25519 file."""
    if path.exists():
        try:
            key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        except (ValueError, TypeError, OSError) as exc:
            raise ReceiptError(f"{path}: not a PEM private key ({exc})") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise ReceiptError(f"{path}: not an Ed25519 key")
        return key
    path.parent.mkdir(parents=True, exist_ok=True)
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    return key


def public_pem(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    """The public key as PEM (SubjectPublicKeyInfo) text: what ``leaf-live receipts pubkey`` publishes."""
    pub = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return pub.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()


def key_id(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    pub = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    raw = pub.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def sign_receipt(key: Ed25519PrivateKey, fields: dict) -> dict:
    """The signed receipt of ``fields`` (every name of :data:`FIELDS` but ``key_id``, which is added)."""
    body = {k: fields[k] for k in FIELDS if k != "key_id"}
    body["key_id"] = key_id(key)
    sig = key.sign(canonical_json(body))
    return {**body, "signature": base64.b64encode(sig).decode()}


def _utc_text(t) -> str | None:
    return None if t is None else t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def receipt_of(key: Ed25519PrivateKey, sub) -> dict:
    """The signed receipt of an accepted submission (:class:`leaf_live.service.inbox.Accepted`): its id, team,
    model, round, track, content hash, ``received_at`` and due time (UTC, microseconds, ``Z``), board and row
    count."""
    return sign_receipt(
        key,
        {
            "receipt_id": sub.receipt_id,
            "team": sub.team,
            "model_id": sub.model_id,
            "round_id": sub.round_id,
            "track": sub.track,
            "content_hash": sub.content_hash,
            "received_at": _utc_text(sub.received_at),
            "due_at": _utc_text(sub.due_at),
            "board": sub.board,
            "n_rows": sub.n_rows,
        },
    )


def load_public_pem(text: str | bytes) -> Ed25519PublicKey:
    try:
        pub = serialization.load_pem_public_key(text.encode() if isinstance(text, str) else text)
    except ValueError as exc:
        raise ReceiptError(f"public key: not a PEM public key ({exc})") from None
    if not isinstance(pub, Ed25519PublicKey):
        raise ReceiptError("public key: not an Ed25519 key")
    return pub


def verify_receipt(pub: Ed25519PublicKey, receipt: dict) -> None:
    """Check ``receipt`` against the public key; returns None when it verifies. Raises :class:`ReceiptError`
    naming a missing or unexpected field, a key id that is not this key's, or a signature that does not match
    the fields (any field altered)."""
    if not isinstance(receipt, dict):
        raise ReceiptError("receipt: not a JSON object")
    missing = [k for k in (*FIELDS, "signature") if k not in receipt]
    extra = [k for k in receipt if k not in FIELDS and k != "signature"]
    if missing or extra:
        raise ReceiptError(f"receipt: missing fields {missing}, unexpected fields {extra}")
    if receipt["key_id"] != key_id(pub):
        raise ReceiptError(f"receipt: key_id {receipt['key_id']!r} is not the published key {key_id(pub)!r}")
    try:
        sig = base64.b64decode(receipt["signature"], validate=True)
    except (ValueError, TypeError):
        raise ReceiptError("receipt: signature is not base64") from None
    body = {k: receipt[k] for k in FIELDS}
    try:
        pub.verify(sig, canonical_json(body))
    except InvalidSignature:
        raise ReceiptError(
            "receipt: signature does not match its fields (altered, or signed by another key)"
        ) from None


def read_receipt(path: Path) -> dict:
    """A receipt from a JSON file; :class:`ReceiptError` for an unreadable or non-JSON file."""
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ReceiptError(f"{path}: not a readable JSON receipt ({exc})") from None
