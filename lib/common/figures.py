"""The suite's one figure style, and saving figures as PNG plus a vector (SVG) copy with a small stamp."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Optional

_NAME = re.compile(r"fig\d+[a-z]?_[a-z0-9_]+")
STYLE = {
    "figure.dpi": 100,
    "savefig.dpi": 200,
    "figure.figsize": (7.0, 4.2),
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 8.5,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "svg.fonttype": "none",
}


def set_style() -> None:
    """Apply the suite's style (seaborn whitegrid, colour-blind palette, compact fonts)."""
    import matplotlib as mpl
    import seaborn as sns

    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind", rc=STYLE)
    mpl.rcParams.update(STYLE)


def save_figure(
    fig,
    name: str,
    cfg=None,
    *,
    out_dir: Optional[Path] = None,
    paper: Optional[str] = None,
    mode: Optional[str] = None,
    seed: Optional[int] = None,
    formats: Iterable[str] = ("png", "svg"),
    thumbnail=False,
) -> Path:
    """Stamp ``fig`` with paper, mode and seed, save it as ``figures/<name>.png`` (and ``.svg``).

    Pass the run's ``cfg`` (a :class:`~lib.common.config.RunConfig`) or ``out_dir``/``paper``/``mode``/``seed``.
    ``name`` looks like ``fig3_benchmark``. Returns the PNG's path.

    ``thumbnail`` picks the gallery card's picture (``figures/thumbnail.png``): ``True`` for the whole figure, or
    one of its axes (``thumbnail=axes[0]``) to crop that panel, legible at card size. One figure per notebook
    should pass it; without one, the gallery shows the first figure.
    """
    if not _NAME.fullmatch(name):
        raise ValueError(f"figure name {name!r} must look like 'fig3_benchmark' (fig<k>_<what>, lower case)")
    if cfg is not None:
        out_dir, paper, mode, seed = cfg.out_dir, cfg.paper, cfg.mode, cfg.seed
    if out_dir is None:
        raise ValueError("save_figure needs cfg or out_dir")
    folder = Path(out_dir) / "figures"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = " · ".join(s for s in (paper, f"mode={mode}" if mode else None,
                                    f"seed={seed}" if seed is not None else None) if s)
    if stamp and not getattr(fig, "_iclr26_stamped", False):
        fig.text(0.995, 0.003, stamp, ha="right", va="bottom", fontsize=6, color="0.45")
        fig._iclr26_stamped = True
    if thumbnail is not False and thumbnail is not None:
        save_thumbnail(fig, folder, None if thumbnail is True else thumbnail)
    # the tight box once (a layout pass without rasterising), then one draw per format: savefig(bbox_inches="tight")
    # would draw twice per format
    import matplotlib as mpl

    fig.draw_without_rendering()
    box = fig.get_tightbbox(fig.canvas.get_renderer()).padded(mpl.rcParams["savefig.pad_inches"])
    paths = []
    for fmt in formats:
        path = folder / f"{name}.{fmt}"
        fig.savefig(path, bbox_inches=box)
        paths.append(path)
    return paths[0]


THUMBNAIL = "thumbnail.png"


def save_thumbnail(fig, folder: Path, ax=None, *, dpi: int = 110) -> Path:
    """Write ``folder/thumbnail.png``: the whole figure, or the panel ``ax`` (with its title, labels and legend)."""
    if ax is not None and getattr(ax, "figure", None) is not fig:
        raise ValueError("save_figure: thumbnail must be True or one of this figure's axes")
    path = Path(folder) / THUMBNAIL
    if ax is None:
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
        return path
    from matplotlib.transforms import Bbox

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [ax.get_tightbbox(renderer)]
    legend = ax.get_legend()
    if legend is not None:
        boxes.append(legend.get_window_extent(renderer))
    box = Bbox.union([b for b in boxes if b is not None]).transformed(fig.dpi_scale_trans.inverted())
    fig.savefig(path, dpi=dpi, bbox_inches=box.expanded(1.04, 1.06))
    return path


_SUPERSCRIPT = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")


def pow10_label(value, _pos=None) -> str:
    """Tick label of an exact power of ten as plain text with Unicode superscripts ("10⁻⁸", "1", "10"); "" for any
    other value. matplotlib re-parses mathtext labels on every draw once a figure has more than 50 of them, which
    costs seconds on axes that span many decades."""
    import math

    if not value > 0:
        return ""
    e = math.log10(value)
    if abs(e - round(e)) > 1e-9:
        return ""
    e = int(round(e))
    return {0: "1", 1: "10"}.get(e, "10" + str(e).translate(_SUPERSCRIPT))


def pow10_log_axis(axis, numticks: int = 6, locate: bool = True) -> None:
    """Label a log axis (``ax.xaxis`` / ``ax.yaxis``) at powers of ten with :func:`pow10_label`, without minor ticks
    (8 minor ticks per decade over many decades cost more to lay out than to draw). ``locate=False`` keeps the
    axis's major tick locator and only sets the labels."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    if locate:
        axis.set_major_locator(LogLocator(base=10, numticks=numticks))
    axis.set_major_formatter(FuncFormatter(pow10_label))
    axis.set_minor_locator(NullLocator())


def plain_log_labels(ax, x: bool = True, y: bool = True) -> None:
    """Plain-text tick labels ("0.04", "1000", "1e+06") on log axes, much cheaper to draw than mathtext: at 1-2-5 steps when
    the data span at most 2.5 decades, at powers of ten otherwise; no minor labels. Call after plotting."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    import numpy as np

    box = ax.dataLim
    for on, axis, (lo, hi) in ((x, ax.xaxis, box.intervalx), (y, ax.yaxis, box.intervaly)):
        if on:
            decades = np.log10(hi / lo) if lo > 0 and hi > 0 else 10.0
            axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if decades <= 2.5 else (1.0,)))
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            axis.set_minor_formatter(NullFormatter())
