"""A collection's selection as the server's run filters: per field a set of exact values or an
inclusive range, and the stability rule. Chained filters AND together, so they meet here into one
request; a selection that can match nothing is known without asking."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace
from typing import Any

from ._fields import NUMERIC_PARAMS, STRING_PARAMS


@dataclass(frozen=True)
class Query:
    # field -> ("in", frozenset) or ("range", lo, hi); kept sorted by field so equal selections
    # are equal values.
    items: tuple[tuple[str, tuple], ...] = ()
    # "stable", "unstable" or "all"; None for diffusion (no stability).
    stability: str | None = None
    # True when no run can match (an empty value set, stable and unstable at once, ...).
    empty: bool = False

    def _get(self, field: str):
        for f, c in self.items:
            if f == field:
                return c
        return None

    def _put(self, field: str, constraint) -> "Query":
        items = tuple(sorted([*((f, c) for f, c in self.items if f != field), (field, constraint)]))
        return replace(self, items=items)

    def values(self, field: str, values: tuple[Any, ...]) -> "Query":
        """AND `field in values` (Python equality, as the toolkit's `set(values)` test)."""
        if field in STRING_PARAMS:
            wanted = frozenset(v for v in values if isinstance(v, str))
        else:
            wanted = frozenset(_number(v) for v in values if _is_number(v))
        old = self._get(field)
        if old is not None:
            wanted = frozenset(v for v in wanted if _admits(old, v))
        if not wanted:
            return replace(self, empty=True)
        return self._put(field, ("in", wanted))

    def range(self, field: str, lo: Any, hi: Any) -> "Query":
        """AND `lo <= field <= hi` (either bound may be None)."""
        old = self._get(field)
        if old is None:
            return self._put(field, ("range", lo, hi))
        if old[0] == "in":
            kept = frozenset(v for v in old[1] if _admits(("range", lo, hi), v))
            return self._put(field, ("in", kept)) if kept else replace(self, empty=True)
        _, olo, ohi = old
        lo = olo if lo is None else (lo if olo is None else max(lo, olo))
        hi = ohi if hi is None else (hi if ohi is None else min(hi, ohi))
        if lo is not None and hi is not None and lo > hi:
            return replace(self, empty=True)
        return self._put(field, ("range", lo, hi))

    def stable(self, which: str) -> "Query":
        """AND a stability rule ("stable" or "unstable")."""
        if self.stability in (None, "all", which):
            return replace(self, stability=which)
        return replace(self, empty=True)

    def params(self) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        if self.stability is not None:
            out.append(("stability", self.stability))
        for field, c in self.items:
            if field in STRING_PARAMS:
                name = STRING_PARAMS[field]
                out.extend((name, v) for v in sorted(c[1]))
            else:
                name = NUMERIC_PARAMS[field]
                if c[0] == "in":
                    out.append((name, ",".join(_num_text(v) for v in sorted(c[1]))))
                else:
                    if c[1] is not None:
                        out.append((f"{name}_min", _num_text(c[1])))
                    if c[2] is not None:
                        out.append((f"{name}_max", _num_text(c[2])))
        return out

    def expressible(self) -> bool:
        """Whether the server can take this selection as written: its string parameters split values
        at commas, so a value holding one is filtered here instead."""
        return not any(
            field in STRING_PARAMS and any("," in v for v in c[1]) for field, c in self.items
        )


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not (isinstance(v, float) and math.isnan(v))


def _number(v: Any):
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, numbers.Integral):
        return int(v)
    return float(v)


def _num_text(v) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return repr(v) if isinstance(v, float) else str(v)


def _admits(constraint, v) -> bool:
    if constraint[0] == "in":
        return v in constraint[1]
    _, lo, hi = constraint
    try:
        return (lo is None or v >= lo) and (hi is None or v <= hi)
    except TypeError:
        return False
