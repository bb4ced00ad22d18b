"""The runner: execute notebooks with papermill and turn each run into a report folder.

Each run writes, under ``<out>/<slug>/<mode>-seed<N>/``: the executed ``<slug>.ipynb``, its ``<slug>.html``
export, ``figures/``, ``claims.json`` (written by the notebook's ledger) and ``run.json``::

    {"paper", "mode", "seed", "parameters", "status": "ok"|"failed", "duration_s", "started",
     "versions", "git", "error", "claims"}

A failing notebook is recorded (with its traceback) and never stops the other runs.
"""
from __future__ import annotations

import ast
import datetime as _dt
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional

from ..common.claims import write_json_atomic
from ..common.config import MODES
from ..common.paths import project_root
from .notebooks import notebook_parameters

OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "ICLR26_PROGRESS": "0",
    "PYDEVD_DISABLE_FILE_VALIDATION": "1",
}
MANAGED = ("mode", "seed", "out_dir")  # set by the runner, not by -p
VERSION_PACKAGES = ("numpy", "scipy", "pandas", "scikit-learn", "torch", "transformers", "matplotlib", "papermill")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class ParameterError(ValueError):
    """A run was asked for with a parameter the notebook does not have, or a value it cannot take."""


@dataclass
class RunSpec:
    slug: str
    notebook: Path
    mode: str
    seed: int
    run_dir: Path
    parameters: dict = field(default_factory=dict)
    timeout_s: Optional[int] = None

    @property
    def label(self) -> str:
        return f"{self.slug} [{self.mode}, seed {self.seed}]"


def parse_param(text: str) -> tuple[str, Any]:
    """``name=value`` -> (name, value); values are Python literals when they parse as one, else strings."""
    if "=" not in text:
        raise ParameterError(f"-p expects name=value, got {text!r}")
    name, raw = text.split("=", 1)
    name = name.strip()
    if not name.isidentifier():
        raise ParameterError(f"-p {text!r}: {name!r} is not a parameter name")
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        value = raw
    return name, value


def _type_ok(default: Any, value: Any) -> bool:
    if default is None or value is None:
        return True
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, type(default))


def validate_parameters(notebook: Path, mode: str, seeds: Iterable[int], params: dict) -> dict:
    """Refuse unknown names and values of the wrong type before anything runs; returns the parameters."""
    if mode not in MODES:
        raise ParameterError(f"parameter 'mode' got {mode!r}; allowed: one of {', '.join(map(repr, MODES))}")
    for s in seeds:
        if not isinstance(s, int) or isinstance(s, bool) or s < 0:
            raise ParameterError(f"parameter 'seed' got {s!r}; allowed: an integer >= 0")
    try:
        defaults = notebook_parameters(notebook)
    except ValueError as exc:
        raise ParameterError(str(exc)) from exc
    for name in MANAGED:
        if name in params:
            flag = {"mode": "--mode", "seed": "--seed/--seeds", "out_dir": "--out"}[name]
            raise ParameterError(f"parameter {name!r} is set by the runner: use {flag}")
        if name not in defaults:
            raise ParameterError(f"{notebook.name}: the parameters cell lacks {name!r}")
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise ParameterError(
            f"{notebook.name} has no parameter(s) {', '.join(map(repr, unknown))}; "
            f"its parameters are: {', '.join(sorted(defaults))}"
        )
    for name, value in params.items():
        if not _type_ok(defaults[name], value):
            raise ParameterError(
                f"parameter {name!r} got {value!r} ({type(value).__name__}); "
                f"{notebook.name} expects a {type(defaults[name]).__name__} like its default {defaults[name]!r}"
            )
    return dict(params)


def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version(), "platform": platform.platform()}
    for pkg in VERSION_PACKAGES:
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


def git_info(root: Optional[Path] = None) -> dict:
    root = root or project_root()
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    if commit.returncode != 0:
        return {"commit": None, "dirty": None}
    return {"commit": commit.stdout.strip(), "dirty": bool(dirty.stdout.strip())}


def _clean_run_dir(run_dir: Path, slug: str) -> None:
    """Remove what an earlier run left in this run's folder (only the runner's own artefacts)."""
    for name in ("figures",):
        shutil.rmtree(run_dir / name, ignore_errors=True)
    for name in ("claims.json", "run.json", f"{slug}.ipynb", f"{slug}.html"):
        (run_dir / name).unlink(missing_ok=True)


def export_html(ipynb: Path, html: Path) -> None:
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(str(ipynb), as_version=4)
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    tmp = html.with_suffix(".html.tmp")
    tmp.write_text(body, encoding="utf-8")
    os.replace(tmp, html)


def _error_record(exc: BaseException) -> dict:
    ename = getattr(exc, "ename", type(exc).__name__)
    evalue = getattr(exc, "evalue", str(exc))
    tb = getattr(exc, "traceback", None)
    tb_text = "\n".join(tb) if isinstance(tb, list) else "".join(traceback.format_exception(exc))
    return {"ename": str(ename), "evalue": _ANSI.sub("", str(evalue)), "traceback": _ANSI.sub("", tb_text)}


def _claims_summary(path: Path) -> Optional[dict]:
    import json

    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        claims = data["claims"]
    except (ValueError, KeyError):
        return None
    return {
        "total": len(claims),
        "held": sum(bool(c.get("holds")) for c in claims),
        "expected": sum(bool(c.get("expected")) for c in claims),
        "expected_held": sum(bool(c.get("expected")) and bool(c.get("holds")) for c in claims),
    }


def run_one(spec: RunSpec) -> dict:
    """Execute one notebook run and write its folder; never raises for a notebook's failure."""
    import papermill as pm

    os.environ.update(OFFLINE_ENV)
    run_dir = Path(spec.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    _clean_run_dir(run_dir, spec.slug)
    (run_dir / "figures").mkdir(exist_ok=True)
    out_nb = run_dir / f"{spec.slug}.ipynb"
    params = {"mode": spec.mode, "seed": spec.seed, "out_dir": str(run_dir), **spec.parameters}
    started = _dt.datetime.now(_dt.timezone.utc)
    t0 = time.perf_counter()
    error = None
    try:
        pm.execute_notebook(
            str(spec.notebook),
            str(out_nb),
            parameters=params,
            cwd=str(Path(spec.notebook).parent),
            progress_bar=False,
            log_output=False,
            request_save_on_cell_execute=False,
            execution_timeout=spec.timeout_s,
            kernel_manager_class=_ipc_kernel_manager(),
        )
    except BaseException as exc:  # noqa: BLE001 - a notebook's failure is data, not a crash
        if isinstance(exc, KeyboardInterrupt):
            raise
        error = _error_record(exc)
    duration = time.perf_counter() - t0
    if out_nb.exists():
        try:
            export_html(out_nb, run_dir / f"{spec.slug}.html")
        except Exception as exc:  # noqa: BLE001
            error = error or _error_record(exc)
    record = {
        "paper": spec.slug,
        "mode": spec.mode,
        "seed": spec.seed,
        "parameters": {k: v for k, v in params.items() if k != "out_dir"},
        "status": "failed" if error else "ok",
        "duration_s": round(duration, 2),
        "started": started.isoformat(timespec="seconds"),
        "versions": versions(),
        "git": git_info(),
        "error": error,
        "claims": _claims_summary(run_dir / "claims.json"),
        "notebook": str(spec.notebook),
    }
    write_json_atomic(run_dir / "run.json", record)
    return record


def summary_line(record: dict) -> str:
    mark = "ok " if record["status"] == "ok" else "FAIL"
    claims = record.get("claims")
    ctext = (
        f"claims {claims['held']}/{claims['total']} held, {claims['expected_held']}/{claims['expected']} expected held"
        if claims
        else "no claims.json"
    )
    line = f"[{mark}] {record['paper']} [{record['mode']}, seed {record['seed']}] {record['duration_s']:.1f}s, {ctext}"
    if record.get("error"):
        line += f" -- {record['error']['ename']}: {record['error']['evalue'].splitlines()[0] if record['error']['evalue'] else ''}"
    return line


def _execute_local(specs: list[RunSpec], jobs: int, on_done) -> list[dict]:
    if jobs <= 1:
        return [on_done(run_one(s)) for s in specs]
    from concurrent.futures import ProcessPoolExecutor, as_completed

    results = []
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_one, s): s for s in specs}
        for fut in as_completed(futures):
            results.append(on_done(_result_or_crash(fut, futures[fut])))
    return results


def _crash_record(spec: RunSpec, exc: BaseException) -> dict:
    record = {
        "paper": spec.slug, "mode": spec.mode, "seed": spec.seed, "parameters": spec.parameters,
        "status": "failed", "duration_s": 0.0,
        "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "versions": versions(), "git": git_info(), "error": _error_record(exc), "claims": None,
        "notebook": str(spec.notebook),
    }
    Path(spec.run_dir).mkdir(parents=True, exist_ok=True)
    write_json_atomic(Path(spec.run_dir) / "run.json", record)
    return record


def _result_or_crash(fut, spec: RunSpec) -> dict:
    try:
        return fut.result()
    except Exception as exc:  # noqa: BLE001 - a worker that died is recorded like a failed run
        return _crash_record(spec, exc)


def _execute_dask(specs: list[RunSpec], jobs: int, scheduler: Optional[str], on_done) -> list[dict]:
    from dask.distributed import Client, LocalCluster, as_completed

    cluster = None
    if scheduler:
        client = Client(scheduler)
    else:
        cluster = LocalCluster(n_workers=max(1, jobs), threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=40)
        client = Client(cluster)
    try:
        futures = {}
        for s in specs:
            futures[client.submit(run_one, s, pure=False, key=f"run-{s.slug}-{s.mode}-{s.seed}")] = s
        results = []
        for fut in as_completed(list(futures)):
            results.append(on_done(_result_or_crash(fut, futures[fut])))
        return results
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def execute(
    specs: list[RunSpec],
    *,
    jobs: int = 1,
    executor: str = "local",
    scheduler: Optional[str] = None,
    show_progress: bool = True,
) -> list[dict]:
    """Run every spec (locally or on dask) with a progress bar and a summary line per finished run."""
    from tqdm.std import tqdm

    if executor not in ("local", "dask"):
        raise ParameterError(f"parameter 'executor' got {executor!r}; allowed: 'local', 'dask'")
    if jobs < 1:
        raise ParameterError(f"parameter 'jobs' got {jobs!r}; allowed: an integer >= 1")
    bar = tqdm(total=len(specs), desc="runs", unit="run", disable=not show_progress, file=sys.stderr)

    def on_done(record: dict) -> dict:
        bar.update(1)
        bar.write(summary_line(record), file=sys.stdout)
        return record

    try:
        if executor == "dask":
            return _execute_dask(specs, jobs, scheduler, on_done)
        return _execute_local(specs, jobs, on_done)
    finally:
        bar.close()


def make_specs(
    notebooks: list[tuple[str, Path]],
    *,
    mode: str,
    seeds: list[int],
    params: dict,
    out: Path,
    timeout_s: Optional[int] = None,
) -> list[RunSpec]:
    """One spec per (notebook, seed), after validating the parameters against each notebook."""
    specs = []
    for slug, nb in notebooks:
        checked = validate_parameters(nb, mode, seeds, params)
        for seed in seeds:
            specs.append(
                RunSpec(slug=slug, notebook=nb, mode=mode, seed=seed, parameters=checked,
                        run_dir=out / slug / f"{mode}-seed{seed}", timeout_s=timeout_s)
            )
    return specs


def _ipc_kernel_manager():
    """A kernel manager on IPC sockets (local runs): no TCP ports, no 'unencrypted TCP' warning."""
    from jupyter_client.manager import AsyncKernelManager

    class IPCKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs):
            import tempfile
            import uuid

            kwargs.setdefault("transport", "ipc")
            kwargs.setdefault("shutdown_wait_time", 10.0)  # torch kernels can take a few seconds to exit
            kwargs.setdefault("ip", os.path.join(tempfile.gettempdir(), f"iclr26-kernel-{uuid.uuid4().hex[:12]}"))
            super().__init__(**kwargs)

    return IPCKernelManager
