"""Executed reports: HTML exports that work offline.

The export uses the suite's ``iclr26`` nbconvert template (``lib/suite/templates/``): JupyterLab's look without
scripts from a CDN, math rendered by a MathJax copy that ships with the ``jupyter-server-mathjax`` package (copied
once to ``<reports>/_static/mathjax/`` by :func:`ensure_static`), and a top bar linking back to the gallery.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Optional

TEMPLATES = Path(__file__).with_name("templates")
STATIC = "_static"
MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe"
_SKIP = ("localization",)  # MathJax's UI translations: not needed to render math


def mathjax_source() -> Optional[Path]:
    """The MathJax 2 folder shipped inside the ``jupyter_server_mathjax`` package, or None when not installed."""
    try:
        import jupyter_server_mathjax
    except ImportError:
        return None
    path = Path(jupyter_server_mathjax.__file__).with_name("static")
    return path if (path / "MathJax.js").exists() else None


def ensure_static(root: Path) -> Optional[Path]:
    """Copy MathJax under ``root/_static/mathjax`` once (atomically); returns that folder or None without MathJax."""
    src = mathjax_source()
    if src is None:
        return None
    dest = Path(root) / STATIC / "mathjax"
    if (dest / "MathJax.js").exists():
        return dest
    tmp = dest.parent / f".mathjax.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp, ignore=shutil.ignore_patterns(*_SKIP))
    for dirpath, _, files in os.walk(tmp):
        os.chmod(dirpath, 0o755)
        for f in files:
            os.chmod(os.path.join(dirpath, f), 0o644)
    try:
        os.replace(tmp, dest)
    except OSError:  # another process copied it first
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def export_html(ipynb: Path, html: Path, *, depth: int = 2, title: str = "", meta: str = "") -> None:
    """Export the executed notebook ``ipynb`` to ``html``; the report sits ``depth`` folders below the reports root
    (``<root>/<slug>/<mode>-seed<N>/``), which is where the gallery and the MathJax copy are."""
    import nbformat
    from nbconvert import HTMLExporter

    up = "../" * depth
    exporter = HTMLExporter(template_name="iclr26", extra_template_basedirs=[str(TEMPLATES)],
                            mathjax_url=f"{up}{STATIC}/mathjax/MathJax.js?config={MATHJAX_CONFIG}")
    nb = nbformat.read(str(ipynb), as_version=4)
    resources = {"iclr26": {"gallery": f"{up}index.html", "claims": f"{up}CLAIMS.html", "title": title or
                            Path(ipynb).stem, "meta": meta}}
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    tmp = Path(html).with_suffix(".html.tmp")
    tmp.write_text(body, encoding="utf-8")
    os.chmod(tmp, 0o644)
    os.replace(tmp, html)
