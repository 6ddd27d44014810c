"""Content negotiation as Placement's handlers do it: reads answer JSON only (406 for an
``Accept`` that admits none), bodies are taken as JSON only (415 otherwise)."""

from __future__ import annotations

from allocation_ledger.http import errors

JSON = "application/json"


def media_type(header: str | None) -> str | None:
    """The media type of a ``Content-Type`` header, without its parameters."""
    if header is None:
        return None
    return header.split(";", 1)[0].strip().lower() or None


def check_content_type(content_type: str | None) -> None:
    """415 for a body not sent as JSON (Placement's ``require_content``)."""
    if content_type != JSON:
        raise errors.HTTPError(415, f"The media type {content_type} is not supported, use "
                                    f"{JSON}")


def check_accept(accept: str | None) -> None:
    """406 when an ``Accept`` header is sent and accepts no JSON (Placement's
    ``check_accept``): a media range of ``application/json``, ``application/*`` or ``*/*``
    with a quality above 0 accepts it."""
    if not accept or not accept.strip():
        return
    for media_range in accept.split(","):
        kind, *params = (part.strip() for part in media_range.split(";"))
        if kind.lower() not in (JSON, "application/*", "*/*"):
            continue
        quality = next((p.split("=", 1)[1] for p in params
                        if p.replace(" ", "").lower().startswith("q=")), "1")
        try:
            if float(quality) > 0:
                return
        except ValueError:
            continue
    raise errors.HTTPError(406, f"Only {JSON} is provided")
