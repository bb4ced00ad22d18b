"""Runs on a real dask cluster: a scheduler and workers started as separate processes (loopback, ephemeral ports),
each worker in a working folder of its own with its own scratch folder, sharing no folder with the client.

The client names notebooks; the worker resolves them in its own installed project, runs in its scratch folder and
ships the run folder back; the client writes it under --out. Every process is stopped by PID in a finally.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lib.suite.cli import main
from lib.suite.runner import ParameterError, check_worker_versions, identity

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "notebooks"
DASK = Path(sys.executable).with_name("dask")
pytestmark = pytest.mark.skipif(not DASK.exists(), reason="the dask command is not installed")


def _start(cmd, cwd, env, log):
    return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def _stop(procs):
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.time() + 15
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=5)


def _wait_for(predicate, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise TimeoutError(f"timed out waiting for {what}")


def _cluster(tmp_path, n_workers, scheduler_env=None):
    env = dict(os.environ, PYTHONUNBUFFERED="1", **(scheduler_env or {}))
    sched_file = tmp_path / "scheduler.json"
    procs = [_start([str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", str(sched_file)], tmp_path, env, tmp_path / "scheduler.log")]
    _wait_for(sched_file.exists, 60, "the scheduler")
    address = json.loads(sched_file.read_text())["address"]
    workers = []
    for i in range(n_workers):
        home = tmp_path / f"worker{i}"
        (home / "scratch").mkdir(parents=True)
        wenv = dict(env, ICLR26_SCRATCH=str(home / "scratch"), ICLR26_KEEP_SCRATCH="1", TMPDIR=str(home))
        p = _start([str(DASK), "worker", address, "--nworkers", "1", "--nthreads", "1", "--no-dashboard",
                    "--no-nanny", "--local-directory", str(home / "dask")], home, wenv, home / "worker.log")
        procs.append(p)
        workers.append((p, home))
    return address, procs, workers


def _n_workers(address):
    from dask.distributed import Client

    with Client(address, timeout="10s") as c:
        return len(c.scheduler_info()["workers"])


def test_two_notebooks_on_a_scheduler_and_a_worker_sharing_no_folder(tmp_path, capsys):
    address, procs, workers = _cluster(tmp_path, 1)
    client_dir = tmp_path / "client"
    client_dir.mkdir()
    out = client_dir / "out"
    try:
        _wait_for(lambda: _n_workers(address) == 1, 90, "the worker to register")
        before = set(os.listdir(client_dir))
        rc = main(["run", str(FIXTURES / "fixture_ok.ipynb"), str(FIXTURES / "fixture_kinds.ipynb"), "--executor",
                   "dask", "--scheduler", address, "--out", str(out), "--no-progress"])
        assert rc == 0, capsys.readouterr()
        for slug in ("fixture_ok", "fixture_kinds"):
            run_dir = out / slug / "quick-seed0"
            run = json.loads((run_dir / "run.json").read_text())
            assert run["status"] == "ok" and run["executor"] == "dask"
            assert (run_dir / f"{slug}.html").stat().st_size > 1000 and (run_dir / "claims.json").exists()
            assert list((run_dir / "figures").glob("fig1_*.png"))
        assert "fixture_kinds/quick-seed0/figures/thumbnail.png" in (out / "index.html").read_text()
        # the worker wrote in its own scratch folder, not in the client's folders
        scratch = workers[0][1] / "scratch"
        assert sorted(p.name.split("-")[1] for p in scratch.iterdir()) == ["fixture_kinds", "fixture_ok"]
        assert any((p / "run" / "run.json").exists() for p in scratch.iterdir())
        assert set(os.listdir(client_dir)) - before == {"out"}
        assert not list(out.rglob("iclr26-*"))
    finally:
        _stop(procs)
    assert all(p.poll() is not None for p in procs)


def test_a_killed_worker_is_recorded_as_a_failed_run_and_the_other_run_finishes(tmp_path, capsys):
    # allowed-failures 0: a task whose worker dies is not retried elsewhere, so the kill shows as a failed run
    address, procs, workers = _cluster(tmp_path, 2, {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"})
    out = tmp_path / "client_out"
    try:
        _wait_for(lambda: _n_workers(address) == 2, 90, "two workers to register")
        import threading

        def killer():
            def running():
                return [(p, h) for p, h in workers if any("fixture_kinds" in q.name for q in (h / "scratch").iterdir())]
            _wait_for(lambda: running(), 120, "the slow run to start")
            time.sleep(3)
            p, _ = running()[0]
            os.killpg(p.pid, signal.SIGKILL)

        t = threading.Thread(target=killer, daemon=True)
        t.start()
        rc = main(["run", str(FIXTURES / "fixture_kinds.ipynb"), "--executor", "dask", "--scheduler", address,
                   "--out", str(out), "--no-progress", "-p", "sleep_s=60.0"])
        t.join(timeout=5)
        assert rc == 1
        run = json.loads((out / "fixture_kinds" / "quick-seed0" / "run.json").read_text())
        assert run["status"] == "failed" and "Killed" in run["error"]["ename"] + run["error"]["evalue"]
        rc2 = main(["run", str(FIXTURES / "fixture_ok.ipynb"), "--executor", "dask", "--scheduler", address,
                    "--out", str(out), "--no-progress"])
        assert rc2 == 0  # the surviving worker still runs notebooks
    finally:
        _stop(procs)


class _FakeClient:
    def __init__(self, idents):
        self.idents = idents

    def run(self, fn):
        return self.idents


def test_version_check_names_mismatched_workers():
    mine = identity()
    same = dict(mine, host="w1")
    other = dict(mine, commit="0" * 40, host="w2")
    assert check_worker_versions(_FakeClient({"tcp://a": same})) == {"tcp://a": same}
    with pytest.raises(ParameterError, match=r"tcp://b on w2: commit '0000000000"):
        check_worker_versions(_FakeClient({"tcp://a": same, "tcp://b": other}))
    assert check_worker_versions(_FakeClient({"tcp://b": other}), allow_mixed=True)
    with pytest.raises(ParameterError, match="no workers"):
        check_worker_versions(_FakeClient({}))
