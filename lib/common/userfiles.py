"""One contract for every loader of a user-supplied file (``data_path``, ``crows_path``, ...).

A loader of a user file raises :class:`UserFileError` (a ``ValueError``) whose message names the parameter, the
file, the line or record where known, what was found, and what the format expects::

    parameter 'data_path' ('/tmp/kin8nm.data.gz'): the file is gzip-compressed: decompress it first
    (gunzip '/tmp/kin8nm.data.gz'); expected kin8nm as distributed: 9 numbers per row ...

The helpers here do the common part (open as text with a clear decoding error, sniff compression and binary
content, refuse empty files and absurd sizes, read a numeric table with field-count, delimiter, number and
missing-value checks); each paper's reader keeps its format's own checks on top.

Each paper declares its loaders once, in ``lib/<slug>/__init__.py``::

    LOADERS = {
        "data_path": UserFileLoader("data_path", "lib.<slug>.data:read_thing", fixture="data/<slug>/tiny.txt",
                                    expected="..."),
    }

The runner checks ``*_path`` parameters with them before anything runs (exit 2 with the loader's message), and a
suite test runs every declared loader on its fixture (must load) and on the malformed files that
:func:`malformed_variants` generates (must raise ``ValueError`` naming the parameter).
"""
from __future__ import annotations

import gzip
import json
import importlib
import math
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

MAX_BYTES = 512 * 2**20  # a user file larger than this is refused before it is read
MAX_LINE_CHARS = 1_000_000  # a line longer than this is refused (no text format of the suite needs one)
MISSING_MARKERS = ("?", "na", "n/a", "nan", "null", "none", "")

_MAGIC = (
    (b"\x1f\x8b", "gzip-compressed", "gunzip"),
    (b"BZh", "bzip2-compressed", "bunzip2"),
    (b"\xfd7zXZ\x00", "xz-compressed", "unxz"),
    (b"PK\x03\x04", "a zip archive", "unzip"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed", "unzstd"),
    (b"\x89HDF", "an HDF5 file", None),
    (b"\x93NUMPY", "a NumPy .npy file", None),
    (b"PAR1", "a Parquet file", None),
)


class UserFileError(ValueError):
    """A user-supplied file a loader cannot use; ``str()`` is the whole explanation."""

    def __init__(self, parameter: str, path, problem: str, *, expected: Optional[str] = None,
                 line: Optional[int] = None, record: Optional[str] = None):
        self.parameter, self.path, self.problem = parameter, str(path), problem
        self.expected, self.line, self.record = expected, line, record
        where = f"line {line}: " if line is not None else (f"{record}: " if record else "")
        msg = f"parameter {parameter!r} ({str(path)!r}): {where}{problem}"
        if expected:
            msg += f"; expected {expected}"
        super().__init__(msg)


def sniff(path) -> str:
    """What the file's first bytes say: ``"text"``, ``"empty"``, ``"binary"`` or a compression/format name."""
    with open(path, "rb") as fh:
        head = fh.read(8192)
    if not head:
        return "empty"
    for magic, name, _ in _MAGIC:
        if head.startswith(magic):
            return name
    if b"\x00" in head:
        return "binary"
    return "text"


def check_file(parameter: str, path, *, expected: Optional[str] = None, max_bytes: int = MAX_BYTES) -> Path:
    """The path as a readable regular file of sane size, or :class:`UserFileError`."""
    if path is None:
        raise UserFileError(parameter, path, "no file given", expected=expected)
    p = Path(path).expanduser()
    if not p.exists():
        raise UserFileError(parameter, path, "no such file", expected=expected)
    if p.is_dir():
        raise UserFileError(parameter, path, "is a folder, not a file", expected=expected)
    if not os.access(p, os.R_OK):
        raise UserFileError(parameter, path, "the file is not readable (permissions)", expected=expected)
    size = p.stat().st_size
    if size > max_bytes:
        raise UserFileError(parameter, path, f"the file is {size / 2**20:.0f} MiB, more than the "
                            f"{max_bytes / 2**20:.0f} MiB this reader accepts", expected=expected)
    return p


def check_folder(parameter: str, path, *, expected: Optional[str] = None,
                 must_contain: Sequence[str] = ()) -> Path:
    """The path as an existing folder holding ``must_contain`` (names or glob patterns), or :class:`UserFileError`."""
    if path is None:
        raise UserFileError(parameter, path, "no folder given", expected=expected)
    p = Path(path).expanduser()
    if not p.exists():
        raise UserFileError(parameter, path, "no such folder", expected=expected)
    if not p.is_dir():
        kind = sniff(p)
        hint = " (decompress/unpack it first)" if kind not in ("text", "binary", "empty") else ""
        raise UserFileError(parameter, path, f"is a file ({kind}), not a folder{hint}", expected=expected)
    for name in must_contain:
        if not any(p.glob(name)):
            raise UserFileError(parameter, path, f"the folder has no {name!r}", expected=expected)
    return p


def read_text(parameter: str, path, *, expected: Optional[str] = None, encoding: str = "utf-8",
              max_bytes: int = MAX_BYTES, max_line_chars: int = MAX_LINE_CHARS, allow_gzip: bool = False,
              allow_empty: bool = False) -> str:
    """The whole file as text, after the checks every text format needs.

    Refused with :class:`UserFileError`: a missing, unreadable or oversized file; compressed input (gzip is
    decompressed when ``allow_gzip``); binary content; text that does not decode (line and byte named); an empty
    or blank file (unless ``allow_empty``); a line longer than ``max_line_chars``.
    """
    p = check_file(parameter, path, expected=expected, max_bytes=max_bytes)
    kind = sniff(p)
    raw: bytes
    if kind == "gzip-compressed" and allow_gzip:
        try:
            with gzip.open(p, "rb") as fh:
                raw = fh.read(max_bytes + 1)
        except (OSError, EOFError) as exc:
            raise UserFileError(parameter, path, f"a broken gzip file ({exc})", expected=expected) from None
        if len(raw) > max_bytes:
            raise UserFileError(parameter, path, f"decompresses to more than {max_bytes / 2**20:.0f} MiB",
                                expected=expected)
    elif kind not in ("text", "empty"):
        tool = next((t for _, name, t in _MAGIC if name == kind), None)
        if tool:
            hint = f": decompress it first ({tool} {str(path)!r})" + (
                "" if kind != "gzip-compressed" else " or pass the .gz where the reader supports it")
        else:
            hint = ": not a text file"
        if kind == "binary":
            hint = " (NUL bytes): not a text file"
        raise UserFileError(parameter, path, f"the file is {kind}{hint}", expected=expected)
    else:
        raw = p.read_bytes()
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise UserFileError(parameter, path, f"not valid {encoding} text (byte 0x{raw[exc.start]:02x} at offset "
                            f"{exc.start}): a binary file or another encoding?", expected=expected,
                            line=line) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip() and not allow_empty:
        raise UserFileError(parameter, path, "the file is empty" if not text else "the file holds only blank space",
                            expected=expected)
    longest, at = 0, 0
    for k, ln in enumerate(text.splitlines()):
        if len(ln) > longest:
            longest, at = len(ln), k + 1
    if longest > max_line_chars:
        raise UserFileError(parameter, path, f"the line is {longest:,} characters long (more than "
                            f"{max_line_chars:,}): not a file of this format", expected=expected, line=at)
    return text


def read_lines(parameter: str, path, *, expected: Optional[str] = None, comments: Sequence[str] = ("#",),
               skip_blank: bool = True, **kwargs) -> list[tuple[int, str]]:
    """``(line number, stripped line)`` pairs of a text file, comments and blank lines dropped."""
    text = read_text(parameter, path, expected=expected, **kwargs)
    out = []
    for k, ln in enumerate(text.splitlines()):
        s = ln.strip()
        if skip_blank and not s:
            continue
        if comments and any(s.startswith(c) for c in comments):
            continue
        out.append((k + 1, s))
    if not out:
        raise UserFileError(parameter, path, "the file holds no data lines (only comments or blank lines)",
                            expected=expected)
    return out


def read_jsonl(parameter: str, path, *, expected: Optional[str] = None, **kwargs) -> list[tuple[int, dict]]:
    """``(line number, object)`` pairs of a JSON-lines file, blank lines skipped.

    Refused with :class:`UserFileError` (line named): everything :func:`read_text` refuses, a line that is not
    valid JSON, a line whose JSON value is not an object. Field checks are the caller's.
    """
    out = []
    for no, line in read_lines(parameter, path, expected=expected, comments=(), **kwargs):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserFileError(parameter, path, f"not valid JSON ({exc.msg} at column {exc.colno})",
                                expected=expected, line=no) from None
        if not isinstance(rec, dict):
            raise UserFileError(parameter, path, f"a JSON {type(rec).__name__}, not an object", expected=expected,
                                line=no)
        out.append((no, rec))
    return out


_DELIMS = {"whitespace": None, ",": ",", ";": ";", "\t": "\t", "|": "|"}
_DELIM_NAMES = {None: "whitespace", ",": "commas", ";": "semicolons", "\t": "tabs", "|": "bars"}


def _split(line: str, delim: Optional[str]) -> list[str]:
    return line.split() if delim is None else [f.strip() for f in line.split(delim)]


def _detect_delimiter(lines: Sequence[tuple[int, str]]) -> Optional[str]:
    first = lines[0][1]
    for d in ("\t", ",", ";", "|"):
        if d in first:
            return d
    return None


def parse_number(parameter: str, path, token: str, *, line: int, column: int, expected: Optional[str] = None,
                 allow_missing: bool = False) -> float:
    """One numeric field, with a message that says which line and column held what."""
    t = token.strip()
    if t.lower() in MISSING_MARKERS:
        if allow_missing:
            return math.nan
        shown = repr(t) if t else "an empty field"
        raise UserFileError(parameter, path, f"column {column} holds a missing value ({shown})", expected=expected,
                            line=line)
    try:
        v = float(t)
    except ValueError:
        raise UserFileError(parameter, path, f"column {column} holds {t[:40]!r}, which is not a number",
                            expected=expected, line=line) from None
    if not math.isfinite(v) and not allow_missing:
        raise UserFileError(parameter, path, f"column {column} holds a non-finite value ({t!r})", expected=expected,
                            line=line)
    return v


def read_numeric_table(parameter: str, path, *, expected: str, n_cols: Optional[int] = None,
                       min_cols: int = 1, delimiter: str = "auto", header: bool | str = False,
                       allow_missing: bool = False, comments: Sequence[str] = ("#",), min_rows: int = 1,
                       **kwargs):
    """A rectangular table of numbers: ``(array of shape (rows, cols), header names or None)``.

    ``delimiter``: the format's delimiter, ``"whitespace"``, ``","``, ``";"``, ``"\\t"`` or ``"|"``, or a tuple of
    the ones it allows (``("whitespace", ",")``); ``"auto"`` accepts any (tab, comma, semicolon or bar if the first
    line has one, else whitespace). A file that uses another delimiter is refused. ``header``: ``False`` (none), ``True`` (first line
    holds names) or ``"auto"`` (a first line with non-numeric fields is a header). Every line must have the same
    number of fields (``n_cols`` when given, at least ``min_cols``), use the same delimiter, and hold numbers;
    missing markers (``?``, ``NA``, ``nan``, empty) are refused unless ``allow_missing`` (then NaN).
    """
    import numpy as np

    lines = read_lines(parameter, path, expected=expected, comments=comments, **kwargs)
    allowed = tuple(_DELIMS) if delimiter == "auto" else (
        (delimiter,) if isinstance(delimiter, str) else tuple(delimiter))
    bad = [d for d in allowed if d not in _DELIMS]
    if bad:
        raise ValueError(f"read_numeric_table: delimiter {delimiter!r}; allowed: 'auto' or some of "
                         f"{', '.join(map(repr, _DELIMS))}")
    delim = _detect_delimiter(lines)
    if _DELIM_NAMES[delim] not in [_DELIM_NAMES[_DELIMS[d]] for d in allowed]:
        raise UserFileError(parameter, path, f"fields are separated by {_DELIM_NAMES[delim]}",
                            expected=expected, line=lines[0][0])
    names = None
    first_fields = _split(lines[0][1], delim)
    if header is True or (header == "auto" and any(_not_number(f) for f in first_fields)):
        names = first_fields
        lines = lines[1:]
        if not lines:
            raise UserFileError(parameter, path, "the file holds a header but no data rows", expected=expected)
    width = n_cols if n_cols is not None else (len(names) if names else len(_split(lines[0][1], delim)))
    rows = []
    for lineno, line in lines:
        if delim is None:
            for other in (",", ";", "\t", "|"):
                if other in line and other != "\t":
                    raise UserFileError(parameter, path, f"fields are separated by {_DELIM_NAMES[other]}, the "
                                        f"file's other lines by whitespace" if lineno != lines[0][0] else
                                        f"fields are separated by {_DELIM_NAMES[other]}", expected=expected,
                                        line=lineno)
        elif delim not in line and width > 1:
            raise UserFileError(parameter, path, f"the line has no {_DELIM_NAMES[delim]} (the file's delimiter)",
                                expected=expected, line=lineno)
        fields = _split(line, delim)
        if len(fields) != width or len(fields) < min_cols:
            want = width if len(fields) != width else f"at least {min_cols}"
            raise UserFileError(parameter, path, f"the line has {len(fields)} fields, not {want}", expected=expected,
                                line=lineno)
        rows.append([parse_number(parameter, path, f, line=lineno, column=j + 1, expected=expected,
                                  allow_missing=allow_missing) for j, f in enumerate(fields)])
    if len(rows) < min_rows:
        raise UserFileError(parameter, path, f"the file has {len(rows)} data rows, fewer than {min_rows}",
                            expected=expected)
    return np.asarray(rows, dtype=float), names


def _not_number(token: str) -> bool:
    try:
        float(token)
        return False
    except ValueError:
        return True


def read_csv_frame(parameter: str, path, *, expected: str, required: Sequence[str] = (), numeric: bool = True,
                   **kwargs):
    """A headed CSV (comma, semicolon or tab) as a pandas DataFrame, checked like :func:`read_numeric_table`.

    ``numeric=False`` reads text columns: quoted fields may hold the delimiter and newlines; ``delimiter`` fixes the
    delimiter (else the one of comma, semicolon, tab that the header holds most of), and a record with more or fewer
    fields than the header is refused with its line number."""
    import pandas as pd

    data, names = read_numeric_table(parameter, path, expected=expected, header=True, **kwargs) if numeric else (
        None, None)
    if numeric:
        frame = pd.DataFrame(data, columns=names)
    else:
        import csv
        import io

        text = read_text(parameter, path, expected=expected)
        delim = kwargs.get("delimiter")
        if delim is None:
            first = next((ln for ln in text.splitlines() if ln.strip()), "")
            delim = max((",", ";", "\t"), key=first.count)
        reader = csv.reader(io.StringIO(text), delimiter=delim)
        try:
            header = next((r for r in reader if r), [])
            for row in reader:
                if row and len(row) != len(header):
                    raise UserFileError(parameter, path, f"{len(row)} fields where the header has {len(header)} "
                                        f"(delimiter {delim!r})", expected=expected, line=reader.line_num)
        except csv.Error as exc:
            raise UserFileError(parameter, path, f"not a CSV table ({exc})", expected=expected,
                                line=reader.line_num) from None
        try:
            frame = pd.read_csv(io.StringIO(text), sep=delim, engine="python")
        except (pd.errors.ParserError, ValueError) as exc:
            raise UserFileError(parameter, path, f"not a CSV table ({str(exc).splitlines()[0]})",
                                expected=expected) from None
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise UserFileError(parameter, path, f"no column(s) {', '.join(map(repr, missing))} in the header "
                            f"(found {', '.join(map(repr, list(frame.columns)[:12]))})", expected=expected)
    return frame


# --- pickled numpy dicts (the python versions of CIFAR-10/100 and their kin) ------------------------------------
_PICKLE_GLOBALS = {("_codecs", "encode"), ("numpy", "ndarray"), ("numpy", "dtype"),
                   ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
                   ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar")}


def _numpy_pickle_global(module: str, name: str):
    if module == "_codecs":
        import codecs
        return getattr(codecs, name)
    import numpy as np
    if module == "numpy":
        return getattr(np, name)
    try:  # numpy >= 2 pickles name numpy._core, older ones numpy.core: either resolves here
        from numpy._core import multiarray
    except ImportError:  # numpy < 2
        from numpy.core import multiarray
    return getattr(multiarray, name)


def read_pickle(parameter: str, path, *, expected: str, unpack_hint: str = "decompress it first") -> dict:
    """The dict in a pickle of numpy arrays, lists, strings and numbers, or a :class:`UserFileError`.

    Only numpy's array/dtype/scalar rebuilders (and ``_codecs.encode``) may be named by the pickle: any other
    global is refused as a foreign pickle, since unpickling it could run code. ``unpack_hint`` says what to do with
    a compressed file (e.g. "unpack the CIFAR-10 archive first (tar xzf cifar-10-python.tar.gz)").
    """
    import io
    import pickle

    class _Restricted(pickle.Unpickler):
        def find_class(self, module, name):
            if (module, name) not in _PICKLE_GLOBALS:
                raise pickle.UnpicklingError(f"refers to {module}.{name}, which a numpy data pickle never needs")
            return _numpy_pickle_global(module, name)

    p = check_file(parameter, path, expected=expected)
    kind = sniff(p)
    if kind == "empty":
        raise UserFileError(parameter, p, "the file is empty", expected=expected)
    if kind not in ("binary", "text"):
        raise UserFileError(parameter, p, f"the file is {kind}: {unpack_hint}", expected=expected)
    raw = p.read_bytes()
    if raw[:1] != b"\x80":
        raise UserFileError(parameter, p, f"not a pickle (it starts with {raw[:8]!r}; a pickle of protocol >= 2 "
                            "starts with 0x80)", expected=expected)
    try:
        obj = _Restricted(io.BytesIO(raw), encoding="bytes").load()
    except Exception as exc:  # noqa: BLE001 - any failure of a damaged pickle becomes the user's message
        raise UserFileError(parameter, p, f"a damaged or foreign pickle ({type(exc).__name__}: {str(exc)[:120]})",
                            expected=expected) from None
    if not isinstance(obj, dict):
        raise UserFileError(parameter, p, f"holds a {type(obj).__name__}, not a dict", expected=expected)
    return obj


def write_pickles(folder, payloads: Mapping[str, Any]) -> dict:
    """Write each payload as ``folder/<name>`` (pickle protocol 2, as CIFAR's python version); returns name -> sha256.

    For the seeded fixtures of pickle-format readers (their ``make_data`` scripts)."""
    import hashlib
    import pickle

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, obj in payloads.items():
        data = pickle.dumps(obj, protocol=2)
        (folder / name).write_bytes(data)
        out[name] = hashlib.sha256(data).hexdigest()
    return out


# --- the loader declarations and the malformed-file set -------------------------------------------------------
@dataclass(frozen=True)
class UserFileLoader:
    """One user-file parameter of a paper: how to read it, and a tiny valid fixture.

    ``load`` is ``"module:function"`` (imported only when called) or a callable taking the path. ``kind`` is
    ``"file"`` or ``"folder"``; for a folder, ``target`` names the file inside it that the malformed variants
    replace. ``skip`` maps a variant's name to the reason it does not apply (``{"field_missing": "a sparse format:
    rows may omit any feature"}``). ``cheap``: the runner may call it before a run to check the user's file.
    """

    parameter: str
    load: Any
    fixture: str
    expected: str = ""
    kind: str = "file"
    target: Optional[str] = None
    skip: Mapping[str, str] = field(default_factory=dict)
    cheap: bool = True

    def __post_init__(self):
        if self.kind not in ("file", "folder"):
            raise ValueError(f"UserFileLoader {self.parameter!r}: kind {self.kind!r}; allowed: 'file', 'folder'")
        unknown = set(self.skip) - set(VARIANTS)
        if unknown:
            raise ValueError(f"UserFileLoader {self.parameter!r}: skip names unknown variants {sorted(unknown)}; "
                             f"known: {', '.join(VARIANTS)}")

    def function(self) -> Callable:
        if callable(self.load):
            return self.load
        module, _, name = str(self.load).partition(":")
        return getattr(importlib.import_module(module), name)

    def __call__(self, path):
        return self.function()(path)

    def fixture_path(self) -> Path:
        from .paths import project_root

        return project_root() / self.fixture


VARIANTS = ("empty", "binary", "gzip", "truncated", "wrong_delimiter", "field_missing", "text_field", "long_line")


def _data_lines(text: str) -> list[int]:
    lines = text.splitlines()
    return [k for k, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith(("#", "%", "c "))]


def _delimiter_of(line: str) -> Optional[str]:
    for d in ("\t", ",", ";", "|"):
        if d in line:
            return d
    return None


def _mutate_line(text: str, how: str) -> str:
    lines = text.splitlines()
    idx = _data_lines(text)
    if not idx:
        return text
    k = idx[len(idx) // 2]
    line = lines[k]
    d = _delimiter_of(line)
    fields = line.split(d) if d else line.split()
    joiner = d if d else " "
    if how == "wrong_delimiter":
        new = ";" if d != ";" else ","
        lines = [(ln.replace(d, new) if d else new.join(ln.split())) if j in idx else ln
                 for j, ln in enumerate(lines)]
    elif how == "field_missing":
        lines[k] = joiner.join(fields[:-1]) if len(fields) > 1 else ""
    elif how == "text_field":
        j = min(1, len(fields) - 1)
        fields[j] = "abc"
        lines[k] = joiner.join(fields)
    return "\n".join(lines) + "\n"


def write_variant(source: Path, name: str, dest: Path) -> Path:
    """Write the malformed variant ``name`` of the valid file ``source`` to ``dest``."""
    raw = Path(source).read_bytes()
    dest.parent.mkdir(parents=True, exist_ok=True)
    if name == "empty":
        dest.write_bytes(b"")
    elif name == "binary":
        dest.write_bytes(bytes(range(256)) * 64)
    elif name == "gzip":
        dest.write_bytes(gzip.compress(raw))
    elif name == "truncated":
        text = raw.decode("utf-8", errors="replace").rstrip("\n")
        last = text.rfind("\n")
        tail = text[last + 1:]
        dest.write_text(text[: last + 1 + max(1, len(tail) // 2)], encoding="utf-8")
    elif name in ("wrong_delimiter", "field_missing", "text_field"):
        dest.write_text(_mutate_line(raw.decode("utf-8", errors="replace"), name), encoding="utf-8")
    elif name == "long_line":
        text = raw.decode("utf-8", errors="replace")
        dest.write_text(text + ("1 " * (5 * 2**20)) + "\n", encoding="utf-8")
    else:
        raise ValueError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
    return dest


def _largest_file(folder: Path) -> Path:
    files = [f for f in sorted(folder.rglob("*")) if f.is_file()]
    if not files:
        raise ValueError(f"fixture folder {folder} holds no file")
    return max(files, key=lambda f: f.stat().st_size)


def malformed_variants(loader: UserFileLoader, tmp: Path) -> Iterable[tuple[str, Path]]:
    """``(variant name, path)`` for every malformed copy of the loader's fixture that the contract covers."""
    src = loader.fixture_path()
    tmp = Path(tmp)
    for name in VARIANTS:
        if name in loader.skip:
            continue
        if loader.kind == "file":
            yield name, write_variant(src, name, tmp / name / src.name)
        else:
            copy = tmp / name / src.name
            shutil.copytree(src, copy)
            target = copy / loader.target if loader.target else _largest_file(copy)
            write_variant(target, name, target.with_suffix(target.suffix + ".new"))
            os.replace(target.with_suffix(target.suffix + ".new"), target)
            yield name, copy


def check_user_file(loader: UserFileLoader, path) -> Any:
    """Run ``loader`` on ``path``; any failure that is not already a ``ValueError`` naming the parameter becomes one."""
    try:
        return loader(path)
    except ValueError as exc:
        if loader.parameter in str(exc):
            raise
        raise UserFileError(loader.parameter, path, f"could not be read ({type(exc).__name__}: {exc})",
                            expected=loader.expected or None) from exc
    except (OSError, UnicodeError, KeyError, IndexError, TypeError, EOFError) as exc:
        raise UserFileError(loader.parameter, path, f"could not be read ({type(exc).__name__}: {exc})",
                            expected=loader.expected or None) from exc

