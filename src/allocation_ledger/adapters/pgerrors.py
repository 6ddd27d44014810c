"""psycopg's errors as the ``eventsourcing`` library's, for code that talks to PostgreSQL
without going through the library's datastore (whose ``get_connection`` translates them the
same way, in the same order)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from eventsourcing import persistence

#: psycopg's errors and the library's, most specific first.
_LIBRARY_ERRORS: tuple[tuple[type[Exception], type[Exception]], ...] = (
    (psycopg.InterfaceError, persistence.InterfaceError),
    (psycopg.OperationalError, persistence.OperationalError),
    (psycopg.DataError, persistence.DataError),
    (psycopg.IntegrityError, persistence.IntegrityError),
    (psycopg.InternalError, persistence.InternalError),
    (psycopg.ProgrammingError, persistence.ProgrammingError),
    (psycopg.NotSupportedError, persistence.NotSupportedError),
    (psycopg.DatabaseError, persistence.DatabaseError),
)


def library_error(err: psycopg.Error) -> Exception:
    """The library's error for ``err`` (raise it ``from err``)."""
    for theirs, ours in _LIBRARY_ERRORS:
        if isinstance(err, theirs):
            return ours(str(err))
    return persistence.PersistenceError(str(err))


@contextmanager
def as_library_errors() -> Iterator[None]:
    """Raise psycopg's errors inside as the library's."""
    try:
        yield
    except psycopg.Error as err:
        raise library_error(err) from err
