"""Reading the TOML tables of topology and experiment files strictly.

A key a table does not know is an error naming the file, the table and the closest known key, never
a silently ignored typo (a run with a default value in place of the one meant). Values are read with
their type and range checked, so that a wrong one is a one-line message, never a traceback.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable

_MISSING = object()


def unknown_keys(table: dict, known: Iterable[str], where: str) -> str | None:
    """The message for the first key of `table` not in `known` ("did you mean ...?"), or None."""
    known = sorted(known)
    for key in table:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(known)}"
            return f"{where}: unknown key {key!r}; {hint}"
    return None


def number(table: dict, key: str, where: str, *, default=_MISSING, minimum: float | None = None,
           above: float | None = None, below: float | None = None, integer: bool = False) -> float | int:
    """table[key] as a finite number (an int where `integer`) within the bounds; ValueError naming it.

    minimum: value >= minimum; above: value > above; below: value < below."""
    if key not in table:
        if default is _MISSING:
            raise ValueError(f"{where}: missing key {key!r}")
        return default
    value = table[key]
    kind = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)) \
            or not math.isfinite(value):
        raise ValueError(f"{where}: {key} must be {kind}, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{where}: {key} must be >= {minimum:g}, got {value!r}")
    if above is not None and value <= above:
        raise ValueError(f"{where}: {key} must be > {above:g}, got {value!r}")
    if below is not None and value >= below:
        raise ValueError(f"{where}: {key} must be < {below:g}, got {value!r}")
    return value


def string(table: dict, key: str, where: str, *, default=_MISSING) -> str:
    if key not in table:
        if default is _MISSING:
            raise ValueError(f"{where}: missing key {key!r}")
        return default
    value = table[key]
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where}: {key} must be a non-empty string, got {value!r}")
    return value


def table_of(data: dict, key: str, where: str) -> dict:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ValueError(f"{where}: [{key}] must be a table, got {value!r}")
    return value


def tables_of(data: dict, key: str, where: str) -> list[dict]:
    """An array of tables ([[key]] entries)."""
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ValueError(f"{where}: [[{key}]] must be an array of tables, got {value!r}")
    return value
