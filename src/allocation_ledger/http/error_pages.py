"""Errors for a client that does not read JSON, as Placement's (webob's) answer them.

Placement takes a missing ``Accept``, an empty one and ``*/*`` as JSON; any other is
negotiated between ``text/html`` and ``application/json`` (the first on a tie): an error is
an HTML page for a client that prefers HTML, the JSON error document for one that prefers
JSON, and plain text for one that accepts neither.
"""

from __future__ import annotations

from html import escape
from http import HTTPStatus

HTML = "text/html"
JSON = "application/json"
PLAIN = "text/plain"

# webob's explanation of the statuses the server answers with, the page's first line
_EXPLANATIONS = {
    400: "The server could not comply with the request since it is either malformed or "
         "otherwise incorrect.",
    404: "The resource could not be found.",
    405: "The method is not allowed for this resource.",
    406: "The resource could not be generated that was acceptable to your browser.",
    409: "There was a conflict when trying to complete your request.",
    413: "The request is larger than the server is willing or able to process.",
    415: "The request media type is not supported by this server.",
}


def _quality(params: list[str]) -> float:
    for param in params:
        name, _, value = param.partition("=")
        if name.strip().lower() == "q":
            try:
                return float(value)
            except ValueError:
                return 0.0
    return 1.0


def _accepts(media_range: str, offer: str) -> bool:
    kind, sub = offer.split("/")
    wanted_kind, _, wanted_sub = media_range.partition("/")
    return wanted_kind in ("*", kind) and wanted_sub in ("*", sub)


def chosen(accept: str | None) -> str:
    """The media type an error is answered in for this ``Accept`` header."""
    if accept is None or not accept.strip() or accept.strip() == "*/*":
        return JSON
    best, best_q = PLAIN, 0.0
    for offer in (HTML, JSON):
        quality = 0.0
        for media_range in accept.split(","):
            kind, *params = (part.strip() for part in media_range.split(";"))
            if _accepts(kind.lower(), offer):
                quality = max(quality, _quality(params))
        if quality > best_q:
            best, best_q = offer, quality
    return best


def render(status: int, detail: str, media_type: str) -> bytes:
    """The page (``text/html``) or text (``text/plain``) of an error, webob's shape."""
    line = f"{status} {HTTPStatus(status).phrase}"
    explanation = _EXPLANATIONS.get(status, "")
    if media_type == HTML:
        return (f"<html>\n <head>\n  <title>{line}</title>\n </head>\n <body>\n"
                f"  <h1>{line}</h1>\n  {escape(explanation)}<br /><br />\n{escape(detail)}\n"
                f"\n\n </body>\n</html>").encode()
    return f"{line}\n\n{explanation}\n{detail}\n".encode()
