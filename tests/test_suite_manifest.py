"""`python -m lib manifest`: rows follow the files; a new file takes --provenance, existing rows keep theirs."""
import hashlib

import pytest

from lib.suite import manifest


def _setup(tmp_path):
    data = tmp_path / "data"
    (data / "toy").mkdir(parents=True)
    (data / "toy" / "a.txt").write_text("a\n")
    (data / "README.md").write_text("# Data\n\n| file | bytes | sha256 | provenance |\n|---|---|---|---|\n")
    return data


def test_new_rows_take_the_provenance_and_old_rows_keep_theirs(tmp_path):
    data = _setup(tmp_path)
    assert manifest.update("toy", "`make a` (first)", root=tmp_path) == ["added toy/a.txt"]
    (data / "toy" / "a.txt").write_text("changed\n")
    (data / "toy" / "b.txt").write_text("b\n")
    manifest.update("toy", "`make b` (second)", root=tmp_path)
    text = (data / "README.md").read_text()
    sha = hashlib.sha256(b"changed\n").hexdigest()
    assert f"| `toy/a.txt` | 8 | `{sha}` | `make a` (first) |" in text
    assert "| `toy/b.txt` | 2 |" in text and "`make b` (second)" in text
    manifest.update("toy", "`make all` (third)", root=tmp_path, replace=True)
    assert (data / "README.md").read_text().count("`make all` (third)") == 2
    (data / "toy" / "b.txt").unlink()
    assert manifest.update("toy", root=tmp_path) == ["dropped toy/b.txt (no such file)"]


def test_a_new_file_without_provenance_is_refused(tmp_path):
    _setup(tmp_path)
    with pytest.raises(ValueError, match="give its provenance"):
        manifest.update("toy", root=tmp_path)
