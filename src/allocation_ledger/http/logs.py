"""How the server logs: every line on stderr, as text or as one JSON object per line.

One ``logging.config.dictConfig`` (given to uvicorn as its ``log_config``) sends every
logger to one handler on the root: the access log (``allocation_ledger.access``, see
:mod:`allocation_ledger.http.observe`), the application's own loggers and uvicorn's
(``uvicorn.error``: start, stop, a port in use). With ``json`` each record is one object
(python-json-logger's formatter, encoding with orjson) with ``level``, ``logger``,
``message`` and ``time`` (ISO 8601, UTC) and, for an access line, its fields (``method``,
``path``, ``status``, ``duration_ms``, ``request_id``, ``caller``, ``client``) as keys of
their own; a traceback is its ``exc_info`` string, so a line is always one line.
"""

from __future__ import annotations

from typing import Any

FORMATS = ("text", "json")
ACCESS = "allocation_ledger.access"  # observe.ACCESS's name (observe imports Starlette)
TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: a JSON line's own fields (``time`` is added as an ISO 8601 UTC timestamp; the access
#: log's fields are added by the formatter: every attribute a record has beyond the
#: standard ones, but uvicorn's ``color_message``, its message with terminal colours)
JSON_FIELDS = ["levelname", "name", "message"]
JSON_NAMES = {"levelname": "level", "name": "logger"}
NOT_FIELDS = ["color_message"]

def config(level: str = "info", log_format: str = "text", *, access_log: bool = True
           ) -> dict[str, Any]:
    """The ``dictConfig`` of a server logging at ``level`` (``info`` shows the access log,
    unless ``access_log`` is false) in ``log_format`` (``text`` or ``json``)."""
    if log_format not in FORMATS:
        raise ValueError(f"log format {log_format!r} is not one of {', '.join(FORMATS)}")
    formatter: dict[str, Any] = {"format": TEXT}
    if log_format == "json":
        from pythonjsonlogger.core import RESERVED_ATTRS

        formatter = {"()": "pythonjsonlogger.orjson.OrjsonFormatter", "fmt": JSON_FIELDS,
                     "rename_fields": JSON_NAMES, "timestamp": "time",
                     "reserved_attrs": [*RESERVED_ATTRS, *NOT_FIELDS]}
    return {
        "version": 1,
        "disable_existing_loggers": False,  # the modules' loggers exist before this runs
        "formatters": {"line": formatter},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "line",
                                "stream": "ext://sys.stderr"}},
        "root": {"handlers": ["stderr"], "level": level.upper()},
        # uvicorn's loggers go through the root's one handler (its default config gives
        # them handlers of their own, in its own format)
        "loggers": {
            **{name: {"handlers": [], "propagate": True}
               for name in ("uvicorn", "uvicorn.error", "uvicorn.access")},
            # its lines are INFO: on, they show from --log-level info down (its level is
            # the root's); off, only a warning would
            ACCESS: {"level": "NOTSET" if access_log else "WARNING"},
        },
    }
