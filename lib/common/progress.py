"""Progress bars for long loops (tqdm). ``ICLR26_PROGRESS=0`` turns them off (the runner and tests do)."""
from __future__ import annotations

import os
from typing import Iterable, Optional


def progress_enabled() -> bool:
    return os.environ.get("ICLR26_PROGRESS", "1") not in ("0", "false", "no", "off")


def progress(iterable: Optional[Iterable] = None, desc: str = "", total: Optional[int] = None, **kwargs):
    """A tqdm bar over ``iterable`` (plain text, low refresh rate so executed reports stay readable)."""
    from tqdm.std import tqdm

    kwargs.setdefault("mininterval", 1.0)
    kwargs.setdefault("leave", False)
    kwargs.setdefault("dynamic_ncols", True)
    return tqdm(iterable, desc=desc, total=total, disable=not progress_enabled(), **kwargs)
