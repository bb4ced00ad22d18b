"""MNIST's IDX files as distributed (LeCun et al.), for papers that take MNIST as ``data_path``.

IDX format: a 4-byte magic number (two zero bytes, a type code, 0x08 for unsigned bytes, and the number of
dimensions), one big-endian uint32 per dimension, then the data in C order. MNIST's images are idx3 (n x 28 x 28),
its labels idx1 (n integers in 0..9). Files may be plain or gzip-compressed (as MNIST's site serves them).

    arr = read_idx("train-images-idx3-ubyte.gz", ndim=3)       # one file, every header field and the size checked
    m = read_mnist("path/to/mnist")                            # the four files of a folder: train/test images, labels
    data = idx_bytes(np.zeros((2, 28, 28), np.uint8))          # an array as IDX bytes (fixture scripts)
    digests = write_mnist(folder, arrays)                      # the four files from arrays, {name: sha256}

Errors are :class:`~lib.common.userfiles.UserFileError` naming the parameter, the file and what was found.
"""
from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from .userfiles import UserFileError, check_file, check_folder, sniff

MNIST_FILES = {"train_images": "train-images-idx3-ubyte", "train_labels": "train-labels-idx1-ubyte",
               "test_images": "t10k-images-idx3-ubyte", "test_labels": "t10k-labels-idx1-ubyte"}
MNIST_EXPECTED = ("MNIST as distributed: a folder holding train-images-idx3-ubyte, train-labels-idx1-ubyte, "
                  "t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte (each plain or as .gz), IDX files of unsigned "
                  "bytes: images n x rows x cols, labels n integers in 0..9")
_IDX_TYPES = {0x08: np.uint8}


def _read_raw(parameter: str, path: Path) -> bytes:
    kind = sniff(path)
    if kind == "empty":
        raise UserFileError(parameter, path, "the file is empty", expected=MNIST_EXPECTED)
    if kind == "gzip-compressed":
        try:
            with gzip.open(path, "rb") as fh:
                return fh.read(512 * 2**20 + 1)
        except (OSError, EOFError) as exc:
            raise UserFileError(parameter, path, f"a broken gzip file ({exc})", expected=MNIST_EXPECTED) from None
    if kind not in ("binary", "text"):
        raise UserFileError(parameter, path, f"the file is {kind}: decompress it first", expected=MNIST_EXPECTED)
    return path.read_bytes()


def read_idx(path, *, parameter: str = "data_path", ndim: int | None = None) -> np.ndarray:
    """One IDX file (plain or gzip) as a numpy array, every header field and the size checked."""
    p = check_file(parameter, path, expected=MNIST_EXPECTED)
    raw = _read_raw(parameter, p)
    if len(raw) < 4:
        raise UserFileError(parameter, p, f"the file has {len(raw)} bytes, fewer than an IDX header's 4",
                            expected=MNIST_EXPECTED)
    if raw[0] != 0 or raw[1] != 0:
        raise UserFileError(parameter, p, f"not an IDX file (it starts with {raw[:4].hex(' ')}; an IDX magic "
                            "number starts with two zero bytes)", expected=MNIST_EXPECTED)
    code, nd = raw[2], raw[3]
    if code not in _IDX_TYPES:
        raise UserFileError(parameter, p, f"IDX type code 0x{code:02x}; this reader takes unsigned bytes (0x08), "
                            "as MNIST uses", expected=MNIST_EXPECTED)
    if ndim is not None and nd != ndim:
        raise UserFileError(parameter, p, f"an IDX file of {nd} dimensions, not {ndim}", expected=MNIST_EXPECTED)
    if nd < 1 or len(raw) < 4 + 4 * nd:
        raise UserFileError(parameter, p, f"the header announces {nd} dimensions but the file ends first",
                            expected=MNIST_EXPECTED)
    dims = tuple(int(v) for v in np.frombuffer(raw, dtype=">u4", count=nd, offset=4))
    want = 4 + 4 * nd + int(np.prod(dims, dtype=np.int64))
    if len(raw) != want:
        raise UserFileError(parameter, p, f"the header announces dimensions {dims} ({want:,} bytes with the "
                            f"header) but the file has {len(raw):,} bytes (truncated or not IDX)",
                            expected=MNIST_EXPECTED)
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * nd).reshape(dims)


def _find(parameter: str, folder: Path, stem: str) -> Path:
    for name in (stem, stem + ".gz", stem.replace("-idx", ".idx")):
        if (folder / name).is_file():
            return folder / name
    raise UserFileError(parameter, folder, f"the folder has no {stem!r} (nor {stem + '.gz'!r})",
                        expected=MNIST_EXPECTED)


def read_mnist(path, *, parameter: str = "data_path") -> dict:
    """The four MNIST files of a folder: ``{"train_images": (n, 28, 28) uint8, "train_labels": (n,), ...}``."""
    folder = check_folder(parameter, path, expected=MNIST_EXPECTED)
    out = {}
    for key, stem in MNIST_FILES.items():
        f = _find(parameter, folder, stem)
        arr = read_idx(f, parameter=parameter, ndim=3 if "images" in key else 1)
        if "labels" in key and arr.size and arr.max() > 9:
            raise UserFileError(parameter, f, f"labels hold values up to {int(arr.max())}", expected="labels in 0..9")
        out[key] = arr
    for split in ("train", "test"):
        ni, nl = len(out[f"{split}_images"]), len(out[f"{split}_labels"])
        if ni != nl:
            raise UserFileError(parameter, folder, f"the {split} files hold {ni} images but {nl} labels",
                                expected=MNIST_EXPECTED)
        if ni == 0:
            raise UserFileError(parameter, folder, f"the {split} files hold no images", expected=MNIST_EXPECTED)
    if out["train_images"].shape[1:] != out["test_images"].shape[1:]:
        raise UserFileError(parameter, folder, f"train images are {out['train_images'].shape[1:]} but test images "
                            f"{out['test_images'].shape[1:]}", expected=MNIST_EXPECTED)
    return out


def idx_bytes(arr: np.ndarray) -> bytes:
    """An unsigned-byte array as an IDX file: magic 00 00 08 <ndim>, big-endian uint32 dimensions, the data."""
    arr = np.ascontiguousarray(arr, dtype=np.uint8)
    header = bytes([0, 0, 0x08, arr.ndim]) + np.asarray(arr.shape, dtype=">u4").tobytes()
    return header + arr.tobytes()


def write_mnist(folder, arrays: dict) -> dict:
    """Write ``arrays`` (keys of :data:`MNIST_FILES`) as MNIST's four plain IDX files in ``folder``; returns
    ``{file name: sha256}`` (fixture scripts)."""
    import hashlib

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for key, stem in MNIST_FILES.items():
        data = idx_bytes(arrays[key])
        (folder / stem).write_bytes(data)
        out[stem] = hashlib.sha256(data).hexdigest()
    return out


__all__ = ["MNIST_EXPECTED", "MNIST_FILES", "idx_bytes", "read_idx", "read_mnist", "write_mnist"]
