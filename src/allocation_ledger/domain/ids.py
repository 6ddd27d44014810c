"""Deterministic stream ids.

Providers and consumers are named by the UUIDs their callers chose (as in Placement). Each
kind gets its own namespace, so any caller can find a stream without a lookup and a consumer
can never collide with a provider that happens to share its UUID.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from uuid import UUID

#: uuid5's version and variant bits: the bits it clears, and those it sets
_CLEARED = ~(0xC000 << 48 | 0xF000 << 64)
_VERSION_5 = 0x8000 << 48 | 0x5000 << 64


def uuid5(namespace: UUID, name: str) -> UUID:
    """``uuid.uuid5(namespace, name)``, the same UUID, made from the SHA-1's number rather
    than through ``UUID(bytes=..., version=5)`` (half the time)."""
    return UUID(int=uuid5_number(namespace, name))


def uuid5_number(namespace: UUID, name: str) -> int:
    """The number (``UUID.int``) of ``uuid5(namespace, name)``, without making the UUID
    (the audit compares every stream's id with the one its natural id names)."""
    digest = hashlib.sha1(namespace.bytes + bytes(name, "utf-8"), usedforsecurity=False).digest()
    return int.from_bytes(digest[:16]) & _CLEARED | _VERSION_5


PROVIDER_NAMESPACE = UUID("3f1d6f6e-0b8a-4c55-9c1e-5a0d2b9b7a01")
CONSUMER_NAMESPACE = UUID("8a4e2c51-77d3-4f0e-b0f4-2c6b9d1e4a02")


@lru_cache(maxsize=1 << 14)
def provider_stream_id(provider_uuid: str) -> UUID:
    """The stream id of the provider called ``provider_uuid``."""
    return uuid5(PROVIDER_NAMESPACE, provider_uuid)


@lru_cache(maxsize=1 << 15)  # a command asks several times; uuid5 is a SHA-1
def consumer_stream_id(consumer_uuid: str) -> UUID:
    """The stream id of the consumer called ``consumer_uuid``."""
    return uuid5(CONSUMER_NAMESPACE, consumer_uuid)


COMMAND_NAMESPACE = UUID("c6b1f0a4-2d7e-4b3a-8f5c-1e9d0a7b3c03")
PROVIDER_NAME_NAMESPACE = UUID("5b2e8d17-9c4a-4e61-a3f0-7d1c6b8e2a04")


@lru_cache(maxsize=1 << 12)
def provider_name_stream_id(name: str) -> UUID:
    """The stream id of the provider name ``name`` (see :mod:`.provider_name`)."""
    return uuid5(PROVIDER_NAME_NAMESPACE, name)


@lru_cache(maxsize=1 << 12)
def command_stream_id(command_id: str) -> UUID:
    """The stream id of the command the caller called ``command_id`` (its one record)."""
    return uuid5(COMMAND_NAMESPACE, command_id)


RESOURCE_CLASS_NAMESPACE = UUID("5e0c7a92-3b1f-4d6a-9c2e-7f4b8d1a6e04")


def resource_class_stream_id(name: str) -> UUID:
    """The stream id of the custom resource class called ``name``."""
    return uuid5(RESOURCE_CLASS_NAMESPACE, name)


TRAIT_NAMESPACE = UUID("5d2e7a90-41c6-4b8f-a3d1-7e0f9c2b6d04")


@lru_cache(maxsize=1 << 10)
def trait_stream_id(name: str) -> UUID:
    """The stream id of the custom trait called ``name`` (created anew on the same stream)."""
    return uuid5(TRAIT_NAMESPACE, name)
