"""The ledger's PostgreSQL schema as a deploy step: the chained append, its state, grants.

The append function (``<events>_append``) is ``SECURITY DEFINER`` with its search path
pinned, and callable only by roles granted ``EXECUTE``: it runs as the schema's owner, so
the application role needs no right on the events table but ``SELECT`` (it cannot UPDATE,
DELETE, TRUNCATE, or INSERT rows past the chain). Inside it, under the table lock that
fixes ledger order, each event takes the next position of the table's sequence and its
chain link (``chain.link``, the same bytes, hashed by PostgreSQL's built-in ``sha256``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from psycopg.sql import SQL, Composed, Identifier, Literal

from allocation_ledger.adapters.chain import ChainKey

ABSENT, UNCHAINED, CHAINED = "absent", "unchained", "chained"


@dataclass(frozen=True)
class Names:
    """The names of one ledger's objects in its schema."""

    schema: str
    events: str

    @property
    def chain_table(self) -> str:
        """One row: whether the chain is keyed, the key's check value, any migration."""
        return f"{self.events}_chain"

    @property
    def function(self) -> str:
        """The append function."""
        return f"{self.events}_append"

    @property
    def snapshots(self) -> str:
        """The snapshots table (the library's name for it beside the events)."""
        return self.events.removesuffix("_events") + "_snapshots"

    def qualified(self, name: str) -> Composed:
        """``schema.name``, quoted."""
        return SQL("{0}.{1}").format(Identifier(self.schema), Identifier(name))


# The body runs cold on every call (a new transaction each time: about 120 us of an append's
# server time for a claim of three events, 130 before), so it keeps its statements few: the
# lock timeout set by an assignment (a simple expression, where PERFORM runs a whole SELECT),
# the JSON states parsed once (their count checked on the array they give, not by a second
# parse in json_array_length), each position taken straight into the array the INSERT reads
# and returned as it is taken (no query to return them), each link one expression. The
# chaining stays a loop: positions taken in one query, or the whole append as one INSERT with
# a recursive CTE for the chain, measured slower (about 1.27x and 1.13x the body's time).
_BODY = """
DECLARE
  st bytea[]; prev bytea; tb bytea; setting text;
  positions bigint[] := '{{}}'; hashes bytea[] := '{{}}';
BEGIN
  setting := set_config('lock_timeout', lock_timeout, true);
  LOCK TABLE {table} IN EXCLUSIVE MODE;
  -- the head below must be read after the lock: only READ COMMITTED takes a new snapshot
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'append: the chain needs READ COMMITTED, not %',
      current_setting('transaction_isolation');
  END IF;
  NOTIFY {channel};
  {states}
  SELECT chain_hash INTO prev FROM {table} ORDER BY notification_id DESC LIMIT 1;
  prev := coalesce(prev, '\\x{genesis}'::bytea);
  FOR i IN 1 .. cardinality(ids) LOOP
    positions[i] := nextval({sequence}::regclass);
    tb := convert_to(topics[i], 'UTF8');
    IF inner_key IS NULL THEN
      prev := sha256(prev || int8send(positions[i]) || uuid_send(ids[i])
                     || int8send(versions[i]) || int4send(octet_length(tb)) || tb || st[i]);
    ELSE
      prev := sha256(outer_key || sha256(inner_key || prev || int8send(positions[i])
                     || uuid_send(ids[i]) || int8send(versions[i]) || int4send(octet_length(tb))
                     || tb || st[i]));
    END IF;
    hashes[i] := prev;
    RETURN NEXT positions[i];
  END LOOP;
  INSERT INTO {table} (notification_id, originator_id, originator_version, topic, state,
                       chain_hash)
  SELECT * FROM unnest(positions, ids, versions, topics, st, hashes);
END
"""

_STATES = {
    "bytea[]": "st := states;",
    # the JSON array's elements, as their exact text (one parse: counted on the array it gives)
    "json": "st := ARRAY(SELECT convert_to(s.state::text, 'UTF8') FROM "
            "json_array_elements(states) WITH ORDINALITY AS s(state, n) ORDER BY n); "
            "IF cardinality(st) <> cardinality(ids) THEN "
            "RAISE EXCEPTION 'append: % states for % events', cardinality(st), "
            "cardinality(ids); END IF;",
}


def append_functions(names: Names, channel: str) -> list[Composed]:
    """CREATE statements of the append (one for bytea states, one for a JSON array), with
    EXECUTE revoked from PUBLIC."""
    table = names.qualified(names.events)
    sequence = Literal(f'"{names.schema}"."{names.events}_notification_id_seq"')
    statements: list[Composed] = []
    for states, convert in _STATES.items():
        signature = SQL(
            "{function}(ids uuid[], versions bigint[], topics text[], states {states}, "
            "lock_timeout text, inner_key bytea, outer_key bytea)"
        ).format(function=names.qualified(names.function), states=SQL(states))
        body = SQL(_BODY).format(table=table, channel=Identifier(channel),
                                 states=SQL(convert), genesis=SQL("00" * 32),
                                 sequence=sequence)
        statements.append(SQL(
            "CREATE OR REPLACE FUNCTION {signature} RETURNS SETOF bigint LANGUAGE plpgsql "
            "SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $BODY$ {body} $BODY$"
        ).format(signature=signature, body=body))
        statements.append(SQL("REVOKE ALL ON FUNCTION {0} FROM PUBLIC").format(signature))
    return statements


def schema_state(curs: Any, names: Names) -> str:
    """``ABSENT`` (no events table), ``UNCHAINED`` (a ledger from before the chain) or
    ``CHAINED``; read from the catalog, which every role may read."""
    curs.execute(
        "SELECT to_regclass(%(events)s) IS NOT NULL AS events, "
        "to_regclass(%(chain)s) IS NOT NULL AS chain, EXISTS (SELECT 1 FROM pg_attribute "
        "WHERE attrelid = to_regclass(%(events)s) AND attname = 'chain_hash' "
        "AND NOT attisdropped) AS column",
        {"events": f'"{names.schema}"."{names.events}"',
         "chain": f'"{names.schema}"."{names.chain_table}"'})
    row = curs.fetchone()
    values = list(row.values()) if isinstance(row, dict) else list(row)
    if not values[0]:
        return ABSENT
    return CHAINED if values[1] and values[2] else UNCHAINED


def record_key(curs: Any, names: Names, key: ChainKey | None) -> None:
    """Record, once, whether the chain is keyed and the key's check value."""
    curs.execute(SQL("INSERT INTO {0} (keyed, key_check) SELECT %s, %s "
                     "WHERE NOT EXISTS (SELECT 1 FROM {0})").format(
        names.qualified(names.chain_table)), (key is not None, key.check() if key else None))


def read_key(curs: Any, names: Names) -> tuple[bool, bytes | None]:
    """Whether the chain is keyed, and the key's check value."""
    curs.execute(SQL("SELECT keyed, key_check FROM {0}").format(
        names.qualified(names.chain_table)))
    row = curs.fetchone()
    if row is None:
        return False, None
    values = list(row.values()) if isinstance(row, dict) else list(row)
    return bool(values[0]), bytes(values[1]) if values[1] is not None else None
