"""Tests of the runner, the CLI and the gallery, on two tiny fixture notebooks (one passes, one fails)."""
import json
import os
from pathlib import Path

import pytest

from lib.suite import gallery
from lib.suite.cli import main
from lib.suite.registry import Paper
from lib.suite.runner import ParameterError, execute, make_specs, parse_param, validate_parameters

FIXTURES = Path(__file__).parent / "fixtures" / "notebooks"
OK, FAIL = FIXTURES / "fixture_ok.ipynb", FIXTURES / "fixture_fail.ipynb"


def _paper(slug, number=1, notebook=True):
    return Paper(number=number, slug=slug, title=f"Title of {slug}", authors="A. Author", venue="ICLR 2026",
                 arxiv="2601.00001", openreview="", code="", brief="", notebook=notebook, quick_budget_s=60)


def test_parse_param():
    assert parse_param("n=3") == ("n", 3)
    assert parse_param("lr=1e-3") == ("lr", 0.001)
    assert parse_param("name=gpt2") == ("name", "gpt2")
    assert parse_param("path=/tmp/a b") == ("path", "/tmp/a b")
    assert parse_param("flag=True") == ("flag", True)
    with pytest.raises(ParameterError):
        parse_param("novalue")


def test_seed_lists_and_ranges():
    from lib.suite.cli import parse_seeds

    assert parse_seeds("0,1,2") == [0, 1, 2]
    assert parse_seeds("100-119") == list(range(100, 120))
    assert parse_seeds("0,3,5-7") == [0, 3, 5, 6, 7]
    for bad in ("", "a", "5-3", "1,1", "0-2,2", "-1"):
        with pytest.raises(ParameterError, match="seeds"):
            parse_seeds(bad)


def test_validate_refuses_unknown_and_mistyped_parameters():
    assert validate_parameters(OK, "quick", [0], {"scale": 2}) == {"scale": 2}
    with pytest.raises(ParameterError, match="no parameter.*'nope'.*scale"):
        validate_parameters(OK, "quick", [0], {"nope": 1})
    with pytest.raises(ParameterError, match="'scale'.*float"):
        validate_parameters(OK, "quick", [0], {"scale": "big"})
    with pytest.raises(ParameterError, match="'mode'.*'fast'"):
        validate_parameters(OK, "fast", [0], {})
    with pytest.raises(ParameterError, match="'seed'"):
        validate_parameters(OK, "quick", [-1], {})
    with pytest.raises(ParameterError, match="set by the runner"):
        validate_parameters(OK, "quick", [0], {"out_dir": "/tmp"})


def test_cli_refuses_bad_parameters_before_running(tmp_path, capsys):
    assert main(["run", str(OK), "--out", str(tmp_path), "-p", "mode=fast"]) == 2
    assert "'mode'" in capsys.readouterr().err
    assert main(["run", str(OK), "--out", str(tmp_path), "-p", "nope=1"]) == 2
    assert "'nope'" in capsys.readouterr().err
    assert main(["run", "no_such_paper", "--out", str(tmp_path)]) == 2
    assert "unknown paper" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # nothing ran


def test_failing_notebook_does_not_stop_others(tmp_path, capsys):
    rc = main(["run", str(FAIL), str(OK), "--seeds", "0,1", "--out", str(tmp_path), "--no-progress"])
    assert rc == 1  # non-zero because one notebook failed
    out = capsys.readouterr().out
    failed = json.loads((tmp_path / "fixture_fail" / "quick-seed0" / "run.json").read_text())
    assert failed["status"] == "failed"
    assert failed["error"]["ename"] == "RuntimeError" and "deliberate failure" in failed["error"]["traceback"]
    for seed in (0, 1):
        run_dir = tmp_path / "fixture_ok" / f"quick-seed{seed}"
        run = json.loads((run_dir / "run.json").read_text())
        assert run["status"] == "ok" and run["seed"] == seed and run["mode"] == "quick"
        assert set(run) >= {"paper", "mode", "seed", "parameters", "status", "duration_s", "started", "versions",
                            "git"}
        assert run["parameters"]["seed"] == seed and run["versions"]["python"]
        assert (run_dir / "fixture_ok.html").stat().st_size > 1000
        assert (run_dir / "figures" / "fig1_hist.png").exists() and (run_dir / "figures" / "fig1_hist.svg").exists()
        claims = json.loads((run_dir / "claims.json").read_text())
        assert claims["seed"] == seed and claims["claims"][0]["holds"] is True
    assert "F1: held on 2/2 seeds" in out
    board = (tmp_path / "CLAIMS.md").read_text()
    assert "| fixture_ok | quick | F1 |" in board and "2/2" in board
    assert (tmp_path / "index.html").exists()


def test_parameters_reach_the_notebook(tmp_path):
    specs = make_specs([("fixture_ok", OK)], mode="quick", seeds=[3], params={"scale": 2.5}, out=tmp_path)
    [record] = execute(specs, show_progress=False)
    assert record["status"] == "ok" and record["parameters"]["scale"] == 2.5
    executed = (tmp_path / "fixture_ok" / "quick-seed3" / "fixture_ok.ipynb").read_text()
    assert "scale = 2.5" in executed and "seed = 3" in executed


def test_dask_executor_on_local_cluster(tmp_path):
    pytest.importorskip("dask.distributed")
    specs = make_specs([("fixture_ok", OK), ("fixture_fail", FAIL)], mode="quick", seeds=[0], params={},
                       out=tmp_path)
    records = execute(specs, jobs=2, executor="dask", show_progress=False)
    status = {r["paper"]: r["status"] for r in records}
    assert status == {"fixture_ok": "ok", "fixture_fail": "failed"}
    assert json.loads((tmp_path / "fixture_ok" / "quick-seed0" / "claims.json").read_text())["claims"]


def test_gallery_cards_and_atomic_writes(tmp_path, monkeypatch):
    specs = make_specs([("fixture_ok", OK)], mode="quick", seeds=[0], params={}, out=tmp_path)
    execute(specs, show_progress=False)
    papers = [_paper("fixture_ok", 1), _paper("fixture_planned", 2, notebook=False)]
    index, claims = gallery.build(tmp_path, papers)
    page = index.read_text()
    assert 'src="fixture_ok/quick-seed0/figures/fig1_hist.png"' in page
    assert 'href="fixture_ok/quick-seed0/fixture_ok.html"' in page
    assert "1/1 expected held" in page and "is-planned" in page and "Title of fixture_planned" in page
    before = index.read_text()

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        gallery.build(tmp_path, papers[:1])
    assert index.read_text() == before  # never half-written
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_gallery_marks_over_budget_and_failed_runs(tmp_path):
    run_dir = tmp_path / "slow" / "quick-seed0"
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({"paper": "slow", "mode": "quick", "seed": 0, "status": "failed",
                                                  "duration_s": 75.0, "started": "2026-01-01T00:00:00+00:00"}))
    page = gallery.render_index([_paper("slow")], gallery.collect_runs(tmp_path), tmp_path)
    assert "over the 60 s budget" in page and 'class="badge failed"' in page


def test_relative_path_parameters_are_resolved_against_the_callers_folder(tmp_path, monkeypatch):
    import nbformat

    nb = nbformat.read(str(OK), as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    cell.source += "\ndata_path = None  # a file"
    nb.cells.insert(3, nbformat.v4.new_code_cell("print('DATA', data_path)"))
    path = tmp_path / "with_path.ipynb"
    nbformat.write(nb, str(path))
    (tmp_path / "in.csv").write_text("1\n")
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--no-progress", "-p", "data_path=in.csv"]) == 0
    run = json.loads((tmp_path / "out" / "with_path" / "quick-seed0" / "run.json").read_text())
    assert run["parameters"]["data_path"] == str(tmp_path / "in.csv")
