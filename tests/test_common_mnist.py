"""lib.common.mnist: MNIST's IDX files (plain or gzip), every header field and size checked."""
import gzip

import numpy as np
import pytest

from lib.common.mnist import MNIST_FILES, idx_bytes, read_idx, read_mnist


def _folder(tmp_path, n_train=6, n_test=3):
    rng = np.random.default_rng(0)
    folder = tmp_path / "mnist"
    folder.mkdir()
    arrays = {"train_images": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
              "train_labels": rng.integers(0, 10, n_train, dtype=np.uint8),
              "test_images": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
              "test_labels": rng.integers(0, 10, n_test, dtype=np.uint8)}
    for key, stem in MNIST_FILES.items():
        (folder / stem).write_bytes(idx_bytes(arrays[key]))
    return folder, arrays


def test_idx_roundtrip_plain_and_gzip(tmp_path):
    arr = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    (tmp_path / "a").write_bytes(idx_bytes(arr))
    (tmp_path / "a.gz").write_bytes(gzip.compress(idx_bytes(arr)))
    assert np.array_equal(read_idx(tmp_path / "a"), arr)
    assert np.array_equal(read_idx(tmp_path / "a.gz", ndim=3), arr)
    with pytest.raises(ValueError, match="3 dimensions, not 1"):
        read_idx(tmp_path / "a", ndim=1)


def test_read_mnist_reads_a_folder_with_gzipped_files(tmp_path):
    folder, arrays = _folder(tmp_path)
    p = folder / MNIST_FILES["test_images"]
    (folder / (p.name + ".gz")).write_bytes(gzip.compress(p.read_bytes()))
    p.unlink()
    m = read_mnist(folder)
    for key in MNIST_FILES:
        assert np.array_equal(m[key], arrays[key])


@pytest.mark.parametrize("damage, message", [
    (lambda b: b[:-5], "truncated"),
    (lambda b: b"\x01" + b[1:], "not an IDX file"),
    (lambda b: b[:2] + b"\x0d" + b[3:], "type code"),
    (lambda b: b[:3] + b"\x02" + b[4:], "dimensions"),
    (lambda b: b"", "empty"),
])
def test_malformed_files_are_refused_naming_the_parameter(tmp_path, damage, message):
    folder, _ = _folder(tmp_path)
    target = folder / MNIST_FILES["train_images"]
    target.write_bytes(damage(target.read_bytes()))
    with pytest.raises(ValueError, match=message) as exc:
        read_mnist(folder, parameter="data_path")
    assert "'data_path'" in str(exc.value) and "train-images-idx3-ubyte" in str(exc.value)


def test_mismatched_counts_bad_labels_and_missing_files(tmp_path):
    folder, _ = _folder(tmp_path)
    (folder / MNIST_FILES["train_labels"]).write_bytes(idx_bytes(np.zeros(5, dtype=np.uint8)))
    with pytest.raises(ValueError, match="6 images but 5 labels"):
        read_mnist(folder)
    (folder / MNIST_FILES["train_labels"]).write_bytes(idx_bytes(np.full(6, 12, dtype=np.uint8)))
    with pytest.raises(ValueError, match="labels hold values up to 12"):
        read_mnist(folder)
    (folder / MNIST_FILES["train_labels"]).write_bytes(idx_bytes(np.zeros(6, dtype=np.uint8)))
    (folder / MNIST_FILES["test_labels"]).unlink()
    with pytest.raises(ValueError, match="no 't10k-labels-idx1-ubyte'"):
        read_mnist(folder)
