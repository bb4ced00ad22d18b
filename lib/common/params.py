"""Parameter checks with messages that name the parameter, the bad value and what is allowed."""
from __future__ import annotations

import numbers
from pathlib import Path
from typing import Any, Iterable


def _fail(name: str, value: Any, allowed: str) -> ValueError:
    return ValueError(f"parameter {name!r} got {value!r}; allowed: {allowed}")


def check_choice(name: str, value: Any, allowed: Iterable[Any]) -> Any:
    """Return ``value`` if it is one of ``allowed``, else raise ``ValueError``."""
    allowed = list(allowed)
    if value not in allowed:
        raise _fail(name, value, "one of " + ", ".join(repr(a) for a in allowed))
    return value


def _bounds_text(kind: str, lo, hi, lo_open: bool, hi_open: bool) -> str:
    parts = []
    if lo is not None:
        parts.append(f"{'>' if lo_open else '>='} {lo}")
    if hi is not None:
        parts.append(f"{'<' if hi_open else '<='} {hi}")
    return kind + ((" " + " and ".join(parts)) if parts else "")


def _none_text(allowed: str, allow_none: bool) -> str:
    return "None (the mode's default) or " + allowed if allow_none else allowed


def check_int(name: str, value: Any, lo: int | None = None, hi: int | None = None, *,
              allow_none: bool = False) -> int | None:
    """An integer (bools refused) within ``[lo, hi]``; ``allow_none``: ``None`` passes (a mode-dependent default)."""
    if value is None and allow_none:
        return None
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if ok and (lo is None or value >= lo) and (hi is None or value <= hi):
        return int(value)
    raise _fail(name, value, _none_text(_bounds_text("an integer", lo, hi, False, False), allow_none))


def check_float(
    name: str,
    value: Any,
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
    hi_open: bool = False,
    allow_none: bool = False,
) -> float | None:
    """A real number (ints accepted, bools and NaN refused) within the given bounds; ``allow_none`` as in
    :func:`check_int`."""
    if value is None and allow_none:
        return None
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and value == value
    if ok:
        v = float(value)
        if lo is not None and (v <= lo if lo_open else v < lo):
            ok = False
        if hi is not None and (v >= hi if hi_open else v > hi):
            ok = False
        if ok:
            return v
    raise _fail(name, value, _none_text(_bounds_text("a number", lo, hi, lo_open, hi_open), allow_none))


def check_bool(name: str, value: Any, *, allow_none: bool = False) -> bool | None:
    if isinstance(value, bool) or (value is None and allow_none):
        return value
    raise _fail(name, value, _none_text("True or False", allow_none))


def check_seed(name: str, value: Any) -> int:
    return check_int(name, value, lo=0, hi=2**32 - 1)


def check_path(name: str, value: Any, *, must_exist: bool = True, allow_none: bool = True) -> Path | None:
    """A path to an existing file or folder (``None`` allowed by default: use the offline stand-in).

    A relative path that does not exist from the working folder is also looked up from the project root, so that
    ``data_path="data/<slug>/..."`` works both from the repository root and from a notebook running in ``notebooks/``.
    """
    if value is None:
        if allow_none:
            return None
        raise _fail(name, value, "a path (str)")
    if not isinstance(value, (str, Path)) or str(value) == "":
        raise _fail(name, value, "None or a path (str)" if allow_none else "a path (str)")
    p = Path(value).expanduser()
    if not p.exists() and not p.is_absolute():
        from .paths import project_root

        if (project_root() / p).exists():
            p = project_root() / p
    if must_exist and not p.exists():
        raise ValueError(f"parameter {name!r} got {str(value)!r}; no such file or folder")
    return p
