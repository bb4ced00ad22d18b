"""Where things live: the project root, shipped data, and a run's output folder."""
from __future__ import annotations

import os
from pathlib import Path


def project_root() -> Path:
    """The repository root (``lib/``'s parent). ``ICLR26_ROOT`` overrides it for non-editable installs."""
    env = os.environ.get("ICLR26_ROOT")
    if env:
        return Path(env).resolve()
    return Path(__file__).resolve().parents[2]


def reports_dir() -> Path:
    """The folder for executed runs (``reports/`` at the root; ``ICLR26_REPORTS`` overrides it)."""
    env = os.environ.get("ICLR26_REPORTS")
    return Path(env).resolve() if env else project_root() / "reports"


def data_dir(slug: str) -> Path:
    """Small files a paper ships or generates: ``data/<slug>/``."""
    return project_root() / "data" / slug


def resolve_out_dir(slug: str, out_dir=None) -> Path:
    """A run's output folder: ``out_dir`` when given, else ``reports/<slug>/``; created with ``figures/``."""
    if out_dir is not None and (not isinstance(out_dir, (str, os.PathLike)) or str(out_dir) == ""):
        raise ValueError(f"parameter 'out_dir' got {out_dir!r}; allowed: None or a folder path (str)")
    path = Path(out_dir).expanduser().resolve() if out_dir is not None else reports_dir() / slug
    (path / "figures").mkdir(parents=True, exist_ok=True)
    return path


def update_provenance(folder, entries: dict) -> Path:
    """Merge ``entries`` (file name -> its provenance record) into ``<folder>/provenance.json``, keeping the other
    files' records; written with sorted keys and one-space indents, so that re-running a data script changes
    only its own lines. Returns the JSON file's path."""
    import json

    path = Path(folder) / "provenance.json"
    records = json.loads(path.read_text()) if path.exists() else {}
    records.update(entries)
    path.write_text(json.dumps(records, indent=1, sort_keys=True) + "\n")
    return path
