"""The user-file contract (lib.common.userfiles): clear ValueErrors naming the parameter, for every malformed case."""
import gzip

import numpy as np
import pytest

from lib.common.userfiles import (
    VARIANTS,
    UserFileError,
    UserFileLoader,
    check_folder,
    check_user_file,
    malformed_variants,
    read_csv_frame,
    read_numeric_table,
    read_text,
    sniff,
    write_variant,
)

EXPECTED = "3 numbers per row separated by whitespace"


@pytest.fixture
def table(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("# a comment\n1 2 3\n4 5 6\n7 8 9\n10 11 12\n")
    return p


def _table(path, **kw):
    kw.setdefault("delimiter", "whitespace")
    return read_numeric_table("data_path", path, expected=EXPECTED, n_cols=3, **kw)


def test_valid_table_reads(table):
    data, names = _table(table)
    assert names is None and data.shape == (4, 3) and data[3, 2] == 12


@pytest.mark.parametrize("variant, fragment", [
    ("empty", "empty"), ("binary", "binary"), ("gzip", "gzip-compressed: decompress it first"),
    ("truncated", "fields"), ("wrong_delimiter", "semicolons"), ("field_missing", "2 fields, not 3"),
    ("text_field", "'abc', which is not a number"), ("long_line", "characters long"),
])
def test_every_variant_names_parameter_file_and_problem(table, tmp_path, variant, fragment):
    bad = write_variant(table, variant, tmp_path / "bad" / variant / "t.txt")
    with pytest.raises(UserFileError) as info:
        _table(bad)
    msg = str(info.value)
    assert "parameter 'data_path'" in msg and str(bad) in msg and fragment in msg and EXPECTED in msg
    assert isinstance(info.value, ValueError)


def test_line_numbers_and_missing_markers(tmp_path):
    p = tmp_path / "m.txt"
    p.write_text("1 2 3\n4 ? 6\n")
    with pytest.raises(UserFileError, match=r"line 2: column 2 holds a missing value \('\?'\)"):
        _table(p)
    data, _ = _table(p, allow_missing=True)
    assert np.isnan(data[1, 1])
    p.write_text("1,2,3\n4,5,inf\n")
    with pytest.raises(UserFileError, match="line 2: column 3 holds a non-finite"):
        _table(p, delimiter=",")


def test_header_auto_and_delimiters(tmp_path):
    p = tmp_path / "h.csv"
    p.write_text("a,b,target\n1,2,0\n3,4,1\n")
    data, names = read_numeric_table("data_path", p, expected="csv", header="auto")
    assert names == ["a", "b", "target"] and data.tolist() == [[1, 2, 0], [3, 4, 1]]
    frame = read_csv_frame("data_path", p, expected="csv", required=["target"])
    assert list(frame.columns) == ["a", "b", "target"]
    with pytest.raises(UserFileError, match="no column.*'label'"):
        read_csv_frame("data_path", p, expected="csv", required=["label"])
    p.write_text("1 2 3\n4,5,6\n")
    with pytest.raises(UserFileError, match="line 2: fields are separated by commas"):
        _table(p)
    p.write_text("1;2;3\n4;5;6\n")
    with pytest.raises(UserFileError, match="line 1: fields are separated by semicolons"):
        _table(p, delimiter=("whitespace", ","))
    assert _table(p, delimiter="auto")[0].shape == (2, 3)


def test_decoding_error_names_line_and_byte(tmp_path):
    p = tmp_path / "latin1.txt"
    p.write_bytes("1 2 3\nna\xefve 2 3\n".encode("latin-1"))
    with pytest.raises(UserFileError, match=r"line 2: not valid utf-8 text \(byte 0xef"):
        read_text("data_path", p)


def test_gzip_allowed_when_the_reader_supports_it(table, tmp_path):
    gz = tmp_path / "t.txt.gz"
    gz.write_bytes(gzip.compress(table.read_bytes()))
    assert sniff(gz) == "gzip-compressed"
    assert read_text("data_path", gz, allow_gzip=True) == table.read_text()


def test_missing_folder_and_sizes(tmp_path, table):
    with pytest.raises(UserFileError, match="no such file"):
        read_text("data_path", tmp_path / "nope.txt")
    with pytest.raises(UserFileError, match="is a folder"):
        read_text("data_path", tmp_path)
    with pytest.raises(UserFileError, match="MiB"):
        read_text("data_path", table, max_bytes=10)
    with pytest.raises(UserFileError, match="is a file"):
        check_folder("data_path", table)
    with pytest.raises(UserFileError, match="has no 'set-a'"):
        check_folder("data_path", tmp_path, must_contain=["set-a"])


def test_loader_declaration_and_variants(tmp_path, table, monkeypatch):
    import lib.common.paths as paths

    monkeypatch.setattr(paths, "project_root", lambda: tmp_path)
    loader = UserFileLoader("data_path", lambda p: _table(p), fixture="t.txt", expected=EXPECTED,
                            skip={"long_line": "demo"})
    assert loader(table)[0].shape == (4, 3)
    names = [n for n, _ in malformed_variants(loader, tmp_path / "v")]
    assert names == [v for v in VARIANTS if v != "long_line"]
    with pytest.raises(ValueError, match="unknown variants"):
        UserFileLoader("data_path", "x:y", fixture="t.txt", skip={"nope": "?"})


def test_check_user_file_wraps_a_raw_error(tmp_path):
    def naive(path):
        return dict(line.split("=") for line in open(path).read().splitlines())

    p = tmp_path / "kv.txt"
    p.write_text("a=1\nb\n")
    loader = UserFileLoader("config_path", naive, fixture="kv.txt")
    with pytest.raises(UserFileError, match="parameter 'config_path'.*could not be read \\(ValueError"):
        check_user_file(loader, p)


def test_folder_variants_replace_one_file(tmp_path, monkeypatch):
    import lib.common.paths as paths

    folder = tmp_path / "fx"
    folder.mkdir()
    (folder / "a.txt").write_text("1 2 3\n4 5 6\n")
    (folder / "b.txt").write_text("1 2 3\n")
    monkeypatch.setattr(paths, "project_root", lambda: tmp_path)

    def load(p):
        check_folder("data_path", p, must_contain=["*.txt"])
        return [_table(f) for f in sorted(p.glob("*.txt"))]

    loader = UserFileLoader("data_path", load, fixture="fx", kind="folder")
    assert len(loader(folder)) == 2
    for name, path in malformed_variants(loader, tmp_path / "v"):
        assert (path / "b.txt").read_text() == "1 2 3\n"  # only the largest file changed
        with pytest.raises(ValueError, match="data_path"):
            loader(path)


def test_read_pickle_round_trips_numpy_dicts_and_refuses_foreign_pickles(tmp_path):
    import pickle

    import numpy as np

    from lib.common.userfiles import read_pickle, write_pickles

    digests = write_pickles(tmp_path / "f", {"ok": {b"data": np.arange(6, dtype=np.uint8).reshape(2, 3),
                                                    b"labels": [1, 2]}})
    assert set(digests) == {"ok"} and len(digests["ok"]) == 64
    d = read_pickle("data_path", tmp_path / "f" / "ok", expected="a dict")
    assert d[b"labels"] == [1, 2] and d[b"data"].dtype == np.uint8 and d[b"data"].shape == (2, 3)
    (tmp_path / "evil").write_bytes(pickle.dumps({"f": print}, protocol=2))
    with pytest.raises(UserFileError, match="data_path.*foreign pickle"):
        read_pickle("data_path", tmp_path / "evil", expected="a dict")
    (tmp_path / "list").write_bytes(pickle.dumps([1, 2], protocol=2))
    with pytest.raises(UserFileError, match="not a dict"):
        read_pickle("data_path", tmp_path / "list", expected="a dict")
    (tmp_path / "text").write_text("a,b\n1,2\n")
    with pytest.raises(UserFileError, match="not a pickle"):
        read_pickle("data_path", tmp_path / "text", expected="a dict")


def test_read_jsonl_numbers_lines_and_refuses_bad_ones(tmp_path):
    from lib.common.userfiles import read_jsonl
    p = tmp_path / "rows.jsonl"
    p.write_text('{"a": 1}\n\n{"a": 2, "b": "x"}\n', encoding="utf-8")
    assert read_jsonl("data_path", p) == [(1, {"a": 1}), (3, {"a": 2, "b": "x"})]
    p.write_text('{"a": 1}\n{"a": 2\n', encoding="utf-8")
    with pytest.raises(UserFileError, match=r"'data_path'.*line 2: not valid JSON"):
        read_jsonl("data_path", p, expected="rows")
    p.write_text('{"a": 1}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(UserFileError, match=r"line 2: a JSON list, not an object; expected rows"):
        read_jsonl("data_path", p, expected="rows")
    p.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(UserFileError, match="blank"):
        read_jsonl("data_path", p)


def test_text_csv_frame_quoted_fields_ragged_records_and_fixed_delimiter(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text('id,text,label\n0,"one, two",a\n1,"multi\nline",b\n')
    frame = read_csv_frame("data_path", p, expected="csv", required=["text"], numeric=False)
    assert frame["text"].tolist() == ["one, two", "multi\nline"] and frame["label"].tolist() == ["a", "b"]
    p.write_text('id,text,label\n0,"one, two",a\n1,short\n')
    with pytest.raises(UserFileError, match="'data_path'.*line 3: 2 fields where the header has 3"):
        read_csv_frame("data_path", p, expected="csv", numeric=False)
    p.write_text("id;text;label\n0;x;a\n")
    assert read_csv_frame("data_path", p, expected="csv", required=["text"], numeric=False)["text"].tolist() == ["x"]
    with pytest.raises(UserFileError, match="no column.*'text'"):
        read_csv_frame("data_path", p, expected="csv", required=["text"], numeric=False, delimiter=",")
