"""The hash chain over the ledger: each stored event's hash covers the previous one's.

``link(previous, position, stream, version, topic, state)`` is SHA-256 over the previous
event's chain hash (32 zero bytes before the first event), the event's position as 8 bytes
big-endian, its stream id's 16 bytes, its version as 8 bytes, its topic's UTF-8 length as 4
bytes and the topic, then its state bytes exactly as stored. With a key it is HMAC-SHA256
under that key, so someone with only database access cannot compute a consistent append.
The PostgreSQL append computes the same bytes in SQL (``int8send``, ``uuid_send``,
``sha256``; HMAC as ``sha256(outer || sha256(inner || message))`` from the two padded keys
:meth:`ChainKey.pads` gives, so the key itself never reaches the database).

The key comes from the file ``$LEDGER_CHAIN_KEY_FILE`` or the hex in ``$LEDGER_CHAIN_KEY``,
read when a store opens. A ledger records whether its chain is keyed and a check value of
the key (:meth:`ChainKey.check`) when it is created, and refuses a store opened with another
key (an append with a wrong key would break the chain for everyone after it). Those facts
live in a table an intruder can rewrite: a ledger set back to unkeyed is told apart by the
key holder (an audit with the key reports it, ``check_key``) and by a digest, which records
whether the chain was keyed.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID

from allocation_ledger.domain.errors import StoreUnusable

GENESIS = bytes(32)
KEY_FILE_ENV_VAR = "LEDGER_CHAIN_KEY_FILE"
KEY_ENV_VAR = "LEDGER_CHAIN_KEY"
_BLOCK = 64  # SHA-256's block size, HMAC's key padding
_CHECK = b"allocation-ledger chain key check"
_HEADER = struct.Struct(">q16sqi")
_TOPICS = 1024  # the topics a linker keeps encoded (a ledger has a few dozen)


@dataclass(frozen=True)
class ChainKey:
    """An HMAC key for the chain (its bytes never go into the database)."""

    secret: bytes

    def pads(self) -> tuple[bytes, bytes]:
        """HMAC's inner and outer padded keys, for the PostgreSQL append."""
        key = hashlib.sha256(self.secret).digest() if len(self.secret) > _BLOCK else self.secret
        key = key.ljust(_BLOCK, b"\0")
        return bytes(b ^ 0x36 for b in key), bytes(b ^ 0x5C for b in key)

    def check(self) -> bytes:
        """A value that tells this key from another, stored with the ledger."""
        return hmac.new(self.secret, _CHECK, hashlib.sha256).digest()


def key_from_environment() -> ChainKey | None:
    """The key ``$LEDGER_CHAIN_KEY_FILE`` or ``$LEDGER_CHAIN_KEY`` (hex) names, if any."""
    path = os.environ.get(KEY_FILE_ENV_VAR)
    if path:
        try:
            with open(path, "rb") as file:
                secret = file.read().strip()
        except OSError as err:
            raise StoreUnusable(f"cannot read the chain key file {path}: {err.strerror}",
                                path=path) from err
    else:
        text = os.environ.get(KEY_ENV_VAR)
        if not text:
            return None
        try:
            secret = bytes.fromhex(text)
        except ValueError as err:
            raise StoreUnusable(f"${KEY_ENV_VAR} is not hex") from err
    if len(secret) < 16:
        raise StoreUnusable("the chain key is shorter than 16 bytes", length=len(secret))
    return ChainKey(secret)


def message(previous: bytes, position: int, stream: UUID | str, version: int, topic: str,
            state: bytes) -> bytes:
    """The bytes one link hashes."""
    stream_bytes = stream.bytes if isinstance(stream, UUID) else UUID(stream).bytes
    topic_bytes = topic.encode()
    return b"".join((previous, _HEADER.pack(position, stream_bytes, version, len(topic_bytes)),
                     topic_bytes, state))


def link(previous: bytes, position: int, stream: UUID | str, version: int, topic: str,
         state: bytes, key: ChainKey | None = None) -> bytes:
    """The chain hash of one event, given the previous event's."""
    data = message(previous, position, stream, version, topic, state)
    if key is None:
        return hashlib.sha256(data).digest()
    return hmac.digest(key.secret, data, "sha256")


Link = Callable[[bytes, int, "UUID | str", int, str, bytes], bytes]


def linker(key: ChainKey | None) -> Link:
    """:func:`link` under ``key``, for a reader that links event after event (the audit):
    the same hashes, without the per-call work (each topic encoded once)."""
    secret = key.secret if key is not None else None
    topics: dict[str, bytes] = {}
    pack, sha256, digest = _HEADER.pack, hashlib.sha256, hmac.digest

    def linked(previous: bytes, position: int, stream: UUID | str, version: int, topic: str,
               state: bytes) -> bytes:
        encoded = topics.get(topic)
        if encoded is None:
            encoded = topic.encode()
            if len(topics) < _TOPICS:
                topics[topic] = encoded
        data = b"".join((previous, pack(position, stream.bytes if isinstance(stream, UUID)
                                        else UUID(stream).bytes, version, len(encoded)),
                         encoded, state))
        if secret is None:
            return sha256(data).digest()
        return digest(secret, data, "sha256")

    return linked


def check_key(keyed: bool, stored_check: bytes | None, key: ChainKey | None,
              where: str, *, audit: bool = False) -> bool:
    """Refuse a key that is not the ledger's (or a missing one, or one it does not use).

    A ledger that reads unkeyed while a key is set was either never keyed (the key is set by
    mistake) or was keyed and had its chain recomputed without the key by someone with the
    table alone, to hide an edit: the key holder cannot tell which from the table, so the
    store is refused, except to an ``audit``, for which True is returned: the audit reads
    the chain as stored and reports the downgrade."""
    if keyed and key is None:
        raise StoreUnusable(
            f"the ledger at {where} has a keyed hash chain: set ${KEY_FILE_ENV_VAR} to its key",
            store=where)
    if not keyed and key is not None:
        if audit:
            return True
        raise StoreUnusable(
            f"the ledger at {where} reads as having an unkeyed hash chain, but a chain key is "
            f"set (${KEY_FILE_ENV_VAR} / ${KEY_ENV_VAR}): if it was created keyed, its chain "
            "was recomputed without the key (run `allocation-ledger audit` with the key); if "
            "it never was, unset the key", store=where)
    if key is not None and stored_check is not None and not hmac.compare_digest(
            bytes(stored_check), key.check()):
        raise StoreUnusable(f"the chain key set is not the key of the ledger at {where}",
                            store=where)
    return False
