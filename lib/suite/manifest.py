"""The data manifest (``data/README.md``): one row per shipped file with its size, sha256 and provenance.

``python -m lib manifest <slug> --provenance "<command> (what it makes)"`` lists every file under ``data/<slug>/``:
new files get a row with that provenance, changed files get their size and hash updated with their provenance kept
(``--replace-provenance`` gives every row of the folder the new one), rows of files that no longer exist are dropped. A suite test checks the table against
the files.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Optional

from ..common.paths import project_root

ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*(\d+)\s*\|\s*`([0-9a-f]{64})`\s*\|\s*(.*?)\s*\|\s*$")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def update(slug: str, provenance: Optional[str] = None, root: Optional[Path] = None,
           replace: bool = False) -> list[str]:
    """Bring the manifest's rows for ``data/<slug>/`` in step with the files; returns what changed."""
    root = Path(root or project_root())
    data = root / "data"
    manifest = data / "README.md"
    lines = manifest.read_text(encoding="utf-8").splitlines()
    prefix = f"{slug}/"
    files = sorted(p for p in (data / slug).rglob("*") if p.is_file() and "__pycache__" not in p.parts) \
        if (data / slug).exists() else []
    rows = {}
    keep_lines, first_row_at = [], None
    for i, line in enumerate(lines):
        m = ROW.match(line)
        if m and m.group(1).startswith(prefix):
            rows[m.group(1)] = m.group(4)
            if first_row_at is None:
                first_row_at = len(keep_lines)
            continue
        keep_lines.append(line)
    changes, new_rows = [], []
    for f in files:
        rel = f.relative_to(data).as_posix()
        prov = (provenance or rows.get(rel)) if replace else (rows.get(rel) or provenance)
        if not prov:
            raise ValueError(f"data/{rel} has no row yet: give its provenance (--provenance \"<command> (...)\")")
        if rel not in rows:
            changes.append(f"added {rel}")
        new_rows.append(f"| `{rel}` | {f.stat().st_size} | `{_sha(f)}` | {prov} |")
    for rel in sorted(set(rows) - {f.relative_to(data).as_posix() for f in files}):
        changes.append(f"dropped {rel} (no such file)")
    if first_row_at is None:
        keep_lines += new_rows
    else:
        keep_lines[first_row_at:first_row_at] = new_rows
    text = "\n".join(keep_lines) + "\n"
    if text != manifest.read_text(encoding="utf-8"):
        manifest.write_text(text, encoding="utf-8")
        changes = changes or ["updated sizes/hashes"]
    return changes
