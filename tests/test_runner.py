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
KINDS = FIXTURES / "fixture_kinds.ipynb"


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
    assert "claims held 1/1 quick" in page and "full not run" in page and "Planned (1)" in page
    assert "Title of fixture_planned" in page
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
    assert "× probe)" not in page  # no speed probe recorded: no ratio on the card


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


def _run_kinds(out, mode="quick", seeds=(0,), **params):
    specs = make_specs([("fixture_kinds", KINDS)], mode=mode, seeds=list(seeds), params=params, out=out,
                       speed_probe={"python_s": 0.5, "numpy_s": 0.1, "torch_s": 0.4, "line": "python 0.50s ..."})
    return execute(specs, show_progress=False)


def test_kinds_round_trip_and_scoreboard_counts_claims_and_sanity_apart(tmp_path, capsys):
    _run_kinds(tmp_path, "quick", (0, 1))
    _run_kinds(tmp_path, "full", (0,))
    run_dir = tmp_path / "fixture_kinds" / "quick-seed0"
    claims = json.loads((run_dir / "claims.json").read_text())["claims"]
    assert [c["kind"] for c in claims] == ["claim", "claim", "sanity"]
    run = json.loads((run_dir / "run.json").read_text())
    assert run["claims"] == {"total": 2, "held": 1, "expected": 1, "expected_held": 1, "sanity": 1, "sanity_held": 1}
    papers = [_paper("fixture_kinds", 1)]
    record = gallery.suite_record(papers, gallery.collect_runs(tmp_path))
    [row] = record["papers"]
    assert (row["claims"], row["held_quick"], row["held_full"], row["not_reproduced"]) == (2, 1, 1, 1)
    assert (row["sanity"], row["sanity_passed"], row["quick_seeds"], row["full_seeds"]) == (1, 1, [0, 1], [0])
    index, board = gallery.build(tmp_path, papers)
    page = index.read_text()
    assert "claims held 1/2 quick" in page and "full 1/2" in page and "sanity 1/1" in page
    assert "fixture_kinds/quick-seed0/figures/thumbnail.png" in page
    html_board = (tmp_path / "CLAIMS.html").read_text()
    assert "not reproduced (expected in full mode" not in html_board  # C2 is expected in full, and full ran
    assert "NOT REPRODUCED (expected)" in html_board and "sanity check passed" in html_board
    assert "| fixture_kinds | quick | S1 | sanity |" in board.read_text()
    assert main(["claims", "--out", str(tmp_path)]) == 0
    table = capsys.readouterr().out
    assert "fixture_kinds" in table and "1/2" in table and "TOTAL" in table
    assert main(["claims", "--out", str(tmp_path), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["totals"]["sanity"] == 1


def test_run_json_records_probe_and_cell_durations(tmp_path):
    [record] = _run_kinds(tmp_path)
    run = json.loads((tmp_path / "fixture_kinds" / "quick-seed0" / "run.json").read_text())
    assert run["speed_probe"]["python_s"] == 0.5
    cells = run["cells"]
    assert cells["n_cells"] == 6 and 1 <= len(cells["slowest"]) <= 5 and cells["total_s"] > 0
    assert all({"cell", "duration_s", "first_line"} <= set(c) for c in cells["slowest"])


def test_latest_run_folders_carry_the_probe_and_cell_durations(tmp_path):
    """Every latest run folder under a reports root must let runtimes be compared across machines."""
    from lib.suite.runner import run_record_problems

    _run_kinds(tmp_path, "quick", (0, 1))
    runs = gallery.collect_runs(tmp_path)
    latest = gallery.latest_by_seed(runs["fixture_kinds"], "quick")
    assert len(latest) == 2
    for r in latest:
        assert run_record_problems({k: v for k, v in r.items() if not k.startswith("_")}) == []
    broken = {k: v for k, v in latest[0].items() if not k.startswith("_") and k not in ("speed_probe", "cells")}
    assert run_record_problems(broken) == ["no 'speed_probe'", "no 'cells'", "no speed probe (python_s, numpy_s, "
                                           "torch_s)", "no cell durations (total_s and the slowest cells)"]


def test_failed_rerun_keeps_the_good_run_and_marks_it_stale(tmp_path):
    _run_kinds(tmp_path)
    good = tmp_path / "fixture_kinds" / "quick-seed0"
    before = (good / "fixture_kinds.html").read_bytes()
    [record] = _run_kinds(tmp_path, fail=True)
    assert record["status"] == "failed" and record["kept_previous"] == "quick-seed0"
    assert (good / "fixture_kinds.html").read_bytes() == before  # the good report is untouched
    assert json.loads((good / "run.json").read_text())["status"] == "ok"
    failed = json.loads((tmp_path / "fixture_kinds" / "quick-seed0.failed" / "run.json").read_text())
    assert failed["status"] == "failed" and "deliberate failure" in failed["error"]["traceback"]
    page = gallery.render_index([_paper("fixture_kinds")], gallery.collect_runs(tmp_path), tmp_path)
    assert 'class="badge stale"' in page and 'class="badge ok"' in page
    assert not [p for p in (tmp_path / "fixture_kinds").iterdir() if p.name.startswith(".")]  # no temp left
    _run_kinds(tmp_path)  # a good rerun replaces the folder and clears the failure
    assert not (tmp_path / "fixture_kinds" / "quick-seed0.failed").exists()


def test_report_files_are_world_readable_and_math_is_offline(tmp_path):
    _run_kinds(tmp_path)
    gallery.build(tmp_path, [_paper("fixture_kinds")])
    run_dir = tmp_path / "fixture_kinds" / "quick-seed0"
    for path in [tmp_path / "index.html", tmp_path / "CLAIMS.md", tmp_path / "CLAIMS.html", run_dir / "run.json",
                 run_dir / "claims.json", run_dir / "fixture_kinds.html", run_dir / "figures" / "fig1_sample.png"]:
        assert path.stat().st_mode & 0o777 == 0o644, path
    report = (run_dir / "fixture_kinds.html").read_text()
    assert "cdnjs" not in report and "require.min.js" not in report
    assert "../../_static/mathjax/MathJax.js" in report and (tmp_path / "_static/mathjax/MathJax.js").exists()
    assert 'class="iclr26-claims"' in report and "sanity check passed" in report
    assert ".tmp-" not in report and ".tmp-" not in (run_dir / "fixture_kinds.ipynb").read_text()


def test_bad_values_are_refused_by_the_papers_own_config(tmp_path):
    """-p values of a None-default parameter reach the paper's config() checks before anything runs."""
    nb = Path(__file__).resolve().parents[1] / "notebooks" / "newton_stepsizes.ipynb"
    with pytest.raises(ParameterError, match="n_iters"):
        make_specs([("newton_stepsizes", nb)], mode="quick", seeds=[0], params={"n_iters": "abc"}, out=tmp_path)
    assert not any(tmp_path.iterdir())


def test_path_parameters_are_checked_before_the_run(tmp_path):
    nb = Path(__file__).resolve().parents[1] / "notebooks" / "newton_stepsizes.ipynb"
    with pytest.raises(ParameterError, match="data_path.*no such file"):
        make_specs([("newton_stepsizes", nb)], mode="quick", seeds=[0], params={"data_path": str(tmp_path / "x")},
                   out=tmp_path)


def test_model_name_is_checked_before_the_run():
    from lib.common.tiny_lm import check_model_name

    check_model_name(None)
    with pytest.raises(ValueError, match="'model_name'.*no such local folder"):
        check_model_name("./no/such/model")
    with pytest.raises(ValueError, match="'model_name'.*not in the local Hugging Face cache"):
        check_model_name("no-such-org/no-such-model-xyz")


def test_profile_prints_cells_by_duration(tmp_path, capsys):
    assert main(["profile", str(KINDS), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "seconds" in out and "share" in out and "machine speed: python" in out
    assert "save_figure" in out or "x = cfg.rng" in out
