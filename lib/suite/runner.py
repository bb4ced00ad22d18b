"""The runner: execute notebooks with papermill and turn each run into a report folder.

Each run writes, under ``<out>/<slug>/<mode>-seed<N>/``: the executed ``<slug>.ipynb``, its ``<slug>.html``
export, ``figures/``, ``claims.json`` (written by the notebook's ledger) and ``run.json``::

    {"paper", "mode", "seed", "parameters", "status": "ok"|"failed", "duration_s", "started", "finished",
     "versions", "git", "error", "claims", "speed_probe", "cells", "host", "executor"}

Safe reruns: a run executes in a temporary folder beside its final one and replaces the old folder only when it
finished. A failed run never destroys an earlier good one: the good folder stays and the failure is kept beside it
in ``<mode>-seed<N>.failed/`` (the gallery marks the good run stale). A failing notebook is recorded with its
traceback and never stops the other runs.

On dask (``--executor dask``) a worker resolves the notebook in its own installed project, runs in a scratch
folder of its own, and ships the whole run folder back to the client as bytes (at most :data:`SHIP_LIMIT_BYTES`;
past it, figures are dropped largest first and ``run.json`` says which), so a remote run's report is the same as
a local one's.
"""
from __future__ import annotations

import ast
import datetime as _dt
import io
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional

from ..common.claims import claim_sort_key, write_json_atomic
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
SHIP_LIMIT_BYTES = 64 * 2**20  # a remote run folder larger than this drops figures (largest first) before shipping
FILE_MODE = 0o644
DIR_MODE = 0o755
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class ParameterError(ValueError):
    """A run was asked for with a parameter the notebook does not have, or a value it cannot take."""


@dataclass
class RunSpec:
    """One run. ``notebook`` is the client's path; ``notebook_rel`` the same notebook relative to the project root
    (what a remote worker resolves in its own install); ``notebook_source`` carries the notebook itself when it lies
    outside the project."""

    slug: str
    notebook: Path
    mode: str
    seed: int
    run_dir: Path
    parameters: dict = field(default_factory=dict)
    timeout_s: Optional[int] = None
    notebook_rel: Optional[str] = None
    notebook_source: Optional[str] = None
    speed_probe: Optional[dict] = None

    @property
    def label(self) -> str:
        return f"{self.slug} [{self.mode}, seed {self.seed}]"


# --- parameters -------------------------------------------------------------------------------------------------
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


def config_call(notebook: Path) -> Optional[dict]:
    """The keyword arguments of the notebook's ``<paper>.config(...)`` call, as ``{keyword: ("param", name) |
    ("literal", value)}``; None when the notebook has no such call in its first code cells."""
    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"][:4]
    for cell in code:
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "config"
                    and isinstance(node.func.value, ast.Name)):
                out = {}
                for kw in node.keywords:
                    if kw.arg is None:
                        continue
                    if isinstance(kw.value, ast.Name):
                        out[kw.arg] = ("param", kw.value.id)
                    else:
                        try:
                            out[kw.arg] = ("literal", ast.literal_eval(kw.value))
                        except ValueError:
                            pass  # an expression: the config's default is checked instead
                return out
    return None


def _paper_module(slug: str):
    import importlib

    try:
        return importlib.import_module(f"lib.{slug}")
    except ModuleNotFoundError:
        return None


def validate_with_config(slug: str, notebook: Path, mode: str, seed: int, params: dict) -> None:
    """Call the paper's own ``config(...)`` (validation only: no output, no seeding, no folders) with the run's
    parameters, so that a value the paper refuses (``-p n_factuals=abc``) is refused before anything runs."""
    from ..common.config import validation_only

    call = config_call(notebook)
    module = _paper_module(slug)
    if call is None or module is None or not hasattr(module, "config"):
        return
    values = {**notebook_parameters(notebook), **params, "mode": mode, "seed": seed, "out_dir": None}
    kwargs = {}
    for kw, (kind, ref) in call.items():
        if kind == "literal":
            kwargs[kw] = ref
        elif ref in values:
            kwargs[kw] = values[ref]
    try:
        with validation_only():
            module.config(**kwargs)
    except ValueError as exc:
        raise ParameterError(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - not a verdict on the parameters: the run will show it
        print(f"warning: {slug}: config() could not be checked before the run ({type(exc).__name__}: {exc})",
              file=sys.stderr)


def check_user_inputs(slug: str, params: dict) -> None:
    """``*_path`` parameters (exists, readable, the paper's declared loader accepts it when cheap) and
    ``model_name`` (a local folder that exists, or a hub id present in the local cache when offline)."""
    from ..common.userfiles import check_user_file

    module = _paper_module(slug)
    loaders = getattr(module, "LOADERS", {}) if module is not None else {}
    for name, value in params.items():
        if value is None:
            continue
        if name.endswith("_path"):
            loader = loaders.get(name)
            if not isinstance(value, str):
                raise ParameterError(f"parameter {name!r} got {value!r}; allowed: None or a path (str)")
            if not os.path.exists(value):
                raise ParameterError(f"parameter {name!r} got {value!r}; no such file or folder")
            if not os.access(value, os.R_OK):
                raise ParameterError(f"parameter {name!r} got {value!r}; not readable (permissions)")
            if loader is not None and loader.cheap:
                try:
                    check_user_file(loader, value)
                except ValueError as exc:
                    raise ParameterError(str(exc)) from None
        elif name == "model_name" or name.endswith("_model_name"):
            from ..common.tiny_lm import check_model_name

            try:
                check_model_name(value, parameter=name)
            except ValueError as exc:
                raise ParameterError(str(exc)) from None


# --- provenance ---------------------------------------------------------------------------------------------------
def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version(), "platform": platform.platform()}
    for pkg in ("iclr26-repro",) + VERSION_PACKAGES:
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


def identity() -> dict:
    """What the version check compares between client and workers."""
    v = versions()
    return {"project": v.get("iclr26-repro"), "commit": git_info().get("commit"), "torch": v.get("torch"),
            "python": v.get("python"), "host": socket.gethostname()}


# --- one run ------------------------------------------------------------------------------------------------------
def export_html(ipynb: Path, html: Path, **kwargs) -> None:
    from .report import export_html as _export

    _export(ipynb, html, **kwargs)


def _title(slug: str) -> str:
    from . import registry

    try:
        return registry.get(slug).title
    except KeyError:
        return slug


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
        entries = data["claims"]
    except (ValueError, KeyError):
        return None
    claims = [c for c in entries if c.get("kind", "claim") != "sanity"]
    sanity = [c for c in entries if c.get("kind") == "sanity"]
    return {
        "total": len(claims),
        "held": sum(bool(c.get("holds")) for c in claims),
        "expected": sum(bool(c.get("expected")) for c in claims),
        "expected_held": sum(bool(c.get("expected")) and bool(c.get("holds")) for c in claims),
        "sanity": len(sanity),
        "sanity_held": sum(bool(c.get("holds")) for c in sanity),
    }


def cell_durations(ipynb: Path, top: int = 5) -> dict:
    """Papermill's per-cell durations: the total and the ``top`` slowest cells with their first line."""
    import nbformat

    try:
        nb = nbformat.read(str(ipynb), as_version=4)
    except Exception:  # noqa: BLE001 - a half-written notebook has no timings
        return {"total_s": None, "slowest": [], "n_cells": 0}
    rows = []
    code_index = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        code_index += 1
        d = (cell.metadata.get("papermill") or {}).get("duration")
        if d is None:
            continue
        first = next((ln.strip() for ln in cell.source.splitlines() if ln.strip() and not ln.strip().startswith("#")),
                     cell.source.strip().splitlines()[0] if cell.source.strip() else "")
        rows.append({"cell": code_index, "duration_s": round(float(d), 2), "first_line": first[:100]})
    total = round(sum(r["duration_s"] for r in rows), 2) if rows else None
    return {"total_s": total, "n_cells": code_index,
            "slowest": sorted(rows, key=lambda r: -r["duration_s"])[:top], "all": rows}


def _chmod_tree(root: Path) -> None:
    """Report files 0644, folders 0755 (mkstemp makes 0600 files; users and web servers must read them)."""
    for dirpath, dirnames, filenames in os.walk(root):
        os.chmod(dirpath, DIR_MODE)
        for name in filenames:
            try:
                os.chmod(os.path.join(dirpath, name), FILE_MODE)
            except OSError:
                pass


def execute_into(spec: RunSpec, work_dir: Path, notebook: Optional[Path] = None, *, executor: str = "local") -> dict:
    """Run the notebook with its output folder ``work_dir``; write ``run.json`` there; never raises for a notebook's
    failure."""
    import papermill as pm

    os.environ.update(OFFLINE_ENV)
    notebook = Path(notebook or spec.notebook)
    work_dir = Path(work_dir)
    (work_dir / "figures").mkdir(parents=True, exist_ok=True)
    out_nb = work_dir / f"{spec.slug}.ipynb"
    params = {"mode": spec.mode, "seed": spec.seed, "out_dir": str(work_dir), **spec.parameters}
    started = _dt.datetime.now(_dt.timezone.utc)
    t0 = time.perf_counter()
    error = None
    try:
        pm.execute_notebook(
            str(notebook),
            str(out_nb),
            parameters=params,
            cwd=str(notebook.parent),
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
    git = git_info()
    if out_nb.exists():
        _rewrite_paths(out_nb, work_dir, Path(spec.run_dir))
        meta = (f"{spec.mode} mode · seed {spec.seed} · run {started:%Y-%m-%d %H:%M} UTC · "
                f"{duration:.0f} s · commit {(git.get('commit') or 'unknown')[:10]}{' (dirty)' if git.get('dirty') else ''}")
        try:
            export_html(out_nb, work_dir / f"{spec.slug}.html", title=_title(spec.slug), meta=meta)
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
        "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "versions": versions(),
        "git": git,
        "host": socket.gethostname(),
        "executor": executor,
        "error": error,
        "claims": _claims_summary(work_dir / "claims.json"),
        "speed_probe": spec.speed_probe,
        "cells": {k: v for k, v in cell_durations(out_nb).items() if k != "all"},
        "notebook": spec.notebook_rel or str(notebook),
    }
    write_json_atomic(work_dir / "run.json", record)
    return record


def _rewrite_paths(ipynb: Path, work_dir: Path, final_dir: Path) -> None:
    """The executed notebook printed its temporary output folder; show the folder the run is published to."""
    import json

    old, new = str(Path(work_dir).resolve()), str(Path(final_dir).resolve())
    text = ipynb.read_text(encoding="utf-8")
    if old == new or old not in text and json.dumps(old)[1:-1] not in text:
        return
    text = text.replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1]).replace(old, new)
    tmp = ipynb.with_suffix(".ipynb.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, ipynb)


RUN_FIELDS = ("paper", "mode", "seed", "parameters", "status", "duration_s", "started", "versions", "git", "error",
              "claims", "speed_probe", "cells")


def run_record_problems(record: dict) -> list[str]:
    """What a ``run.json`` lacks for runtimes to be compared across machines (empty when complete): the speed probe
    (python/numpy/torch seconds) and the cell durations (total and the slowest cells with their first line)."""
    problems = [f"no {k!r}" for k in RUN_FIELDS if k not in record]
    probe = record.get("speed_probe")
    if not isinstance(probe, dict) or not all(isinstance(probe.get(k), (int, float)) for k in
                                              ("python_s", "numpy_s", "torch_s")):
        problems.append("no speed probe (python_s, numpy_s, torch_s)")
    cells = record.get("cells")
    if record.get("status") == "ok" and (not isinstance(cells, dict) or not isinstance(cells.get("total_s"), (int, float))
                                         or not cells.get("slowest")
                                         or not all({"cell", "duration_s", "first_line"} <= set(c)
                                                    for c in cells["slowest"])):
        problems.append("no cell durations (total_s and the slowest cells)")
    return problems


def _tmp_dir_for(run_dir: Path) -> Path:
    return run_dir.parent / f".{run_dir.name}.tmp-{uuid.uuid4().hex[:10]}"


def failed_dir_for(run_dir: Path) -> Path:
    return run_dir.parent / f"{run_dir.name}.failed"


def _previous_ok(run_dir: Path) -> bool:
    import json

    try:
        return json.loads((run_dir / "run.json").read_text(encoding="utf-8")).get("status") == "ok"
    except (OSError, ValueError):
        return False


def publish(work_dir: Path, run_dir: Path, record: dict) -> dict:
    """Move a finished run from ``work_dir`` into place.

    ok: it replaces ``run_dir`` (and clears an old ``.failed`` beside it). failed: if ``run_dir`` holds an earlier
    good run, that stays and the failure goes to ``<run_dir>.failed`` (the gallery shows the good run as stale);
    otherwise the failure takes ``run_dir``.
    """
    work_dir, run_dir = Path(work_dir), Path(run_dir)
    _chmod_tree(work_dir)
    failed = failed_dir_for(run_dir)
    if record.get("status") != "ok" and _previous_ok(run_dir):
        target = failed
        record = dict(record, kept_previous=str(run_dir.name))
        write_json_atomic(work_dir / "run.json", record)
        os.chmod(work_dir / "run.json", FILE_MODE)
    else:
        target = run_dir
    trash = run_dir.parent / f".{target.name}.old-{uuid.uuid4().hex[:10]}"
    if target.exists():
        os.replace(target, trash)
    os.replace(work_dir, target)
    shutil.rmtree(trash, ignore_errors=True)
    if target == run_dir and record.get("status") == "ok":
        shutil.rmtree(failed, ignore_errors=True)
    return dict(record, run_dir=str(target))


def run_one(spec: RunSpec) -> dict:
    """Execute one notebook run locally into a temporary folder, then publish it; never raises for a failure."""
    run_dir = Path(spec.run_dir)
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    work = _tmp_dir_for(run_dir)
    try:
        record = execute_into(spec, work)
        return publish(work, run_dir, record)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


# --- remote runs (dask workers that share no folder with the client) ----------------------------------------------
def _resolve_remote_notebook(spec: RunSpec, scratch: Path) -> Path:
    if spec.notebook_rel:
        path = project_root() / spec.notebook_rel
        if path.exists():
            return path
        if spec.notebook_source is None:
            raise FileNotFoundError(f"worker {socket.gethostname()}: no notebook {spec.notebook_rel} in its project "
                                    f"at {project_root()} (is iclr26-repro installed there, at the same commit?)")
    if spec.notebook_source is None:
        raise FileNotFoundError(f"worker {socket.gethostname()}: the spec for {spec.slug} carries no notebook")
    path = scratch / "notebook" / f"{spec.slug}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(spec.notebook_source, encoding="utf-8")
    return path


def _pack(folder: Path, limit: int = SHIP_LIMIT_BYTES) -> tuple[bytes, list[str]]:
    """A gzipped tar of ``folder``; past ``limit`` bytes, figures are left out largest first (their names returned)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    total = sum(p.stat().st_size for p in files)
    dropped: list[str] = []
    if total > limit:
        figs = sorted((p for p in files if "figures" in p.relative_to(folder).parts), key=lambda p: -p.stat().st_size)
        for p in figs:
            if total <= limit:
                break
            total -= p.stat().st_size
            dropped.append(p.relative_to(folder).as_posix())
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for p in files:
            rel = p.relative_to(folder).as_posix()
            if rel not in dropped:
                tar.add(p, arcname=rel)
    return buf.getvalue(), dropped


def scratch_root() -> Path:
    return Path(os.environ.get("ICLR26_SCRATCH") or tempfile.gettempdir())


def run_remote(spec: RunSpec) -> tuple[dict, bytes]:
    """On a worker: run in a scratch folder of the worker's own, return ``(run record, run folder as tar.gz bytes)``.

    The scratch folder is removed after packing unless ``ICLR26_KEEP_SCRATCH=1``.
    """
    from . import probe

    root = scratch_root()
    root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"iclr26-{spec.slug}-{spec.mode}-seed{spec.seed}-", dir=root))
    try:
        work = scratch / "run"
        spec = RunSpec(**{**spec.__dict__, "speed_probe": probe.cached()})
        try:
            notebook = _resolve_remote_notebook(spec, scratch)
        except FileNotFoundError as exc:
            work.mkdir(parents=True, exist_ok=True)
            record = _crash_record(spec, exc, write_to=work)
        else:
            record = execute_into(spec, work, notebook, executor="dask")
        payload, dropped = _pack(work)
        if dropped:
            record = dict(record, shipped={"limit_bytes": SHIP_LIMIT_BYTES, "dropped": dropped})
        return record, payload
    finally:
        if os.environ.get("ICLR26_KEEP_SCRATCH") != "1":
            shutil.rmtree(scratch, ignore_errors=True)


def receive(spec: RunSpec, record: dict, payload: bytes) -> dict:
    """On the client: unpack a remote run into a temporary folder under ``--out`` and publish it."""
    run_dir = Path(spec.run_dir)
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    work = _tmp_dir_for(run_dir)
    try:
        work.mkdir(parents=True)
        with tarfile.open(fileobj=io.BytesIO(payload), mode="r:gz") as tar:
            tar.extractall(work, filter="data")
        if record.get("shipped"):
            write_json_atomic(work / "run.json", record)
        return publish(work, run_dir, record)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


# --- many runs ----------------------------------------------------------------------------------------------------
def summary_line(record: dict) -> str:
    mark = "ok " if record["status"] == "ok" else "FAIL"
    claims = record.get("claims")
    if claims:
        ctext = (f"paper claims {claims['held']}/{claims['total']} held ({claims['expected_held']}/"
                 f"{claims['expected']} expected held)")
        if claims.get("sanity"):
            ctext += f", sanity {claims['sanity_held']}/{claims['sanity']}"
    else:
        ctext = "no claims.json"
    line = f"[{mark}] {record['paper']} [{record['mode']}, seed {record['seed']}] {record['duration_s']:.1f}s, {ctext}"
    if record.get("kept_previous"):
        line += " (the previous good run is kept; this failure is in .failed/)"
    if record.get("error"):
        evalue = record["error"].get("evalue") or ""
        line += f" -- {record['error']['ename']}: {evalue.splitlines()[0] if evalue else ''}"
    return line


def _crash_record(spec: RunSpec, exc: BaseException, write_to: Optional[Path] = None) -> dict:
    record = {
        "paper": spec.slug, "mode": spec.mode, "seed": spec.seed, "parameters": spec.parameters,
        "status": "failed", "duration_s": 0.0,
        "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "versions": versions(), "git": git_info(), "host": socket.gethostname(), "error": _error_record(exc),
        "claims": None, "speed_probe": spec.speed_probe, "cells": None,
        "notebook": spec.notebook_rel or str(spec.notebook),
    }
    if write_to is not None:
        write_json_atomic(Path(write_to) / "run.json", record)
    return record


def _record_crash(spec: RunSpec, exc: BaseException) -> dict:
    """A run that never finished (a killed worker, a dead process): recorded as failed, without destroying a good
    earlier run."""
    run_dir = Path(spec.run_dir)
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    work = _tmp_dir_for(run_dir)
    work.mkdir(parents=True)
    record = _crash_record(spec, exc, write_to=work)
    return publish(work, run_dir, record)


def _execute_local(specs: list[RunSpec], jobs: int, on_done) -> list[dict]:
    if jobs <= 1:
        return [on_done(run_one(s)) for s in specs]
    from concurrent.futures import ProcessPoolExecutor, as_completed

    results = []
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_one, s): s for s in specs}
        for fut in as_completed(futures):
            spec = futures[fut]
            try:
                record = fut.result()
            except Exception as exc:  # noqa: BLE001 - a worker process that died is recorded like a failed run
                record = _record_crash(spec, exc)
            results.append(on_done(record))
    return results


def check_worker_versions(client, allow_mixed: bool = False) -> dict:
    """Compare every worker's project version, git commit and torch version with the client's; refuse mixed
    versions (``ParameterError`` naming the workers) unless ``allow_mixed``. Returns ``{worker: identity}``."""
    mine = identity()
    theirs = client.run(identity)
    if not theirs:
        raise ParameterError("the dask scheduler has no workers: start some with `dask worker <scheduler address>`")
    bad = []
    for worker, ident in sorted(theirs.items()):
        diffs = [f"{k} {ident.get(k)!r} (client {mine.get(k)!r})" for k in ("project", "commit", "torch")
                 if ident.get(k) != mine.get(k)]
        if diffs:
            bad.append(f"{worker} on {ident.get('host')}: " + ", ".join(diffs))
    if bad and not allow_mixed:
        raise ParameterError("workers run another version of the project than this client: " + "; ".join(bad)
                             + ". Install the same commit on every worker, or pass --allow-mixed-versions.")
    for line in bad:
        print(f"warning: mixed versions allowed: {line}", file=sys.stderr)
    return theirs


def _execute_dask(specs: list[RunSpec], jobs: int, scheduler: Optional[str], on_done, *,
                  allow_mixed: bool = False, no_worker_grace_s: float = 120.0) -> list[dict]:
    from dask.distributed import Client, LocalCluster, as_completed

    cluster = None
    if scheduler:
        client = Client(scheduler, timeout="20s")
    else:
        cluster = LocalCluster(n_workers=max(1, jobs), threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=40)
        client = Client(cluster)
    try:
        if scheduler:
            check_worker_versions(client, allow_mixed=allow_mixed)
        futures = {}
        for s in specs:
            # retries=0: a notebook's failure is a returned record, never an exception, so dask re-runs a task only
            # when its worker was lost (the scheduler's allowed-failures), never because a notebook failed
            fut = client.submit(run_remote, s, pure=False, retries=0,
                                key=f"run-{s.slug}-{s.mode}-{s.seed}-{uuid.uuid4().hex[:6]}")
            futures[fut] = s
        results = []
        pending = set(futures)
        no_worker_since = None
        seq = as_completed(list(futures), with_results=False)
        while pending:
            done = []
            try:
                batch = seq.next_batch(block=False)
            except StopIteration:
                break
            done.extend(batch)
            for fut in done:
                pending.discard(fut)
                spec = futures[fut]
                try:
                    record, payload = fut.result()
                    record = receive(spec, record, payload)
                except Exception as exc:  # noqa: BLE001 - KilledWorker, lost connection: a failed run
                    record = _record_crash(spec, exc)
                results.append(on_done(record))
            if pending and not done:
                n_workers = len(client.scheduler_info().get("workers", {}))
                if n_workers == 0:
                    no_worker_since = no_worker_since or time.monotonic()
                    if time.monotonic() - no_worker_since > no_worker_grace_s:
                        for fut in list(pending):
                            exc = RuntimeError(f"no dask worker left for {no_worker_grace_s:.0f} s: the run was lost")
                            results.append(on_done(_record_crash(futures[fut], exc)))
                            fut.cancel()
                        pending.clear()
                else:
                    no_worker_since = None
                time.sleep(0.2)
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
    allow_mixed_versions: bool = False,
    no_worker_grace_s: float = 120.0,
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
            return _execute_dask(specs, jobs, scheduler, on_done, allow_mixed=allow_mixed_versions,
                                 no_worker_grace_s=no_worker_grace_s)
        return _execute_local(specs, jobs, on_done)
    finally:
        bar.close()


def _relative_to_project(nb: Path) -> Optional[str]:
    try:
        return Path(nb).resolve().relative_to(project_root()).as_posix()
    except ValueError:
        return None


def make_specs(
    notebooks: list[tuple[str, Path]],
    *,
    mode: str,
    seeds: list[int],
    params: dict,
    out: Path,
    timeout_s: Optional[int] = None,
    check_config: bool = True,
    speed_probe: Optional[dict] = None,
) -> list[RunSpec]:
    """One spec per (notebook, seed), after validating the parameters against each notebook (its parameters cell,
    its paper's ``config(...)`` checks, and user files with the paper's declared loaders)."""
    specs = []
    for slug, nb in notebooks:
        checked = validate_parameters(nb, mode, seeds, params)
        if check_config:
            check_user_inputs(slug, checked)
            validate_with_config(slug, nb, mode, seeds[0], checked)
        rel = _relative_to_project(nb)
        source = None if rel else Path(nb).read_text(encoding="utf-8")
        for seed in seeds:
            specs.append(
                RunSpec(slug=slug, notebook=nb, mode=mode, seed=seed, parameters=checked,
                        run_dir=out / slug / f"{mode}-seed{seed}", timeout_s=timeout_s, notebook_rel=rel,
                        notebook_source=source, speed_probe=speed_probe)
            )
    return specs


def _ipc_base() -> str:
    """The IPC socket path prefix of a kernel: in the temp folder, or in /tmp when that path is too long for a Unix
    socket (about 107 bytes; jupyter_client appends "-<port>")."""
    name = f"iclr26-kernel-{uuid.uuid4().hex[:12]}"
    base = os.path.join(tempfile.gettempdir(), name)
    return base if len(base) <= 90 else os.path.join("/tmp", name)


def _ipc_kernel_manager():
    """A kernel manager on IPC sockets (local runs): no TCP ports, no 'unencrypted TCP' warning."""
    from jupyter_client.manager import AsyncKernelManager

    class IPCKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs):
            kwargs.setdefault("transport", "ipc")
            kwargs.setdefault("shutdown_wait_time", 10.0)  # torch kernels can take a few seconds to exit
            kwargs.setdefault("ip", _ipc_base())
            super().__init__(**kwargs)

        async def _async_interrupt_kernel(self) -> None:
            # jupyter_client interrupts (SIGINT) every kernel it shuts down; ipykernel then logs "KeyboardInterrupt
            # caught in kernel" at ERROR level after a run that succeeded. A finished notebook needs no interrupt.
            if getattr(self, "shutting_down", False):
                return
            await super()._async_interrupt_kernel()

    return IPCKernelManager


def sorted_claims(claims: list[dict]) -> list[dict]:
    return sorted(claims, key=lambda c: claim_sort_key(c.get("id", "")))
