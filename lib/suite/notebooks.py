"""Notebook utilities: the parameters cell, stripping outputs."""
from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import nbformat


def parameters_cells(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code" and "parameters" in c.get("metadata", {}).get("tags", [])]


def notebook_parameters(path: Path) -> dict[str, Any]:
    """The names and literal default values of a notebook's ``parameters`` cell.

    Raises ``ValueError`` when there is not exactly one such cell or it holds anything but literal
    assignments to plain names.
    """
    nb = nbformat.read(str(path), as_version=4)
    cells = parameters_cells(nb)
    if len(cells) != 1:
        raise ValueError(f"{path}: {len(cells)} cells tagged 'parameters' (want exactly 1)")
    tree = ast.parse(cells[0].source)
    params: dict[str, Any] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            raise ValueError(f"{path}: the parameters cell may hold only `name = <literal>` lines")
        try:
            params[node.targets[0].id] = ast.literal_eval(node.value)
        except ValueError as exc:
            raise ValueError(f"{path}: parameter {node.targets[0].id!r} is not a plain literal") from exc
    return params


def is_stripped(path: Path) -> bool:
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    return all(
        not c.get("outputs") and c.get("execution_count") is None for c in nb.get("cells", []) if c["cell_type"] == "code"
    )


_KEEP_CELL_META = ("tags", "jupyter")  # "jupyter": {"source_hidden": true} collapses a "Try it" answer


def strip_notebook(path: Path) -> bool:
    """Remove outputs, execution counts and per-run metadata; returns True if the file changed."""
    path = Path(path)
    before = path.read_text(encoding="utf-8")
    nb = nbformat.reads(before, as_version=4)
    for cell in nb.cells:
        cell.metadata = {k: v for k, v in cell.metadata.items() if k in _KEEP_CELL_META}
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.metadata = {k: v for k, v in nb.metadata.items() if k in ("kernelspec", "language_info")}
    nb.metadata.get("language_info", {}).pop("version", None)
    after = nbformat.writes(nb) + "\n"
    if after != before:
        path.write_text(after, encoding="utf-8")
        return True
    return False
