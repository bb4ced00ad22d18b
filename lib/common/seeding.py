"""One seed drives everything: global RNGs for libraries that use them, and named independent streams.

``rng_for(seed, "fig3")`` gives the same ``numpy.random.Generator`` for the same (seed, name) whatever
ran before it, so one experiment's draws do not shift when another is added or skipped.
"""
from __future__ import annotations

import hashlib
import os
import random
import sys

import numpy as np


def _stream_key(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's legacy and torch's global generators (for code that uses them).

    torch is seeded only when it is already imported (a paper package that uses torch imports it before its
    ``config`` runs), so numpy-only notebooks do not pay for importing torch.
    """
    random.seed(seed)
    np.random.seed(seed % 2**32)
    os.environ["PYTHONHASHSEED"] = str(seed)  # affects subprocesses only; recorded for completeness
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)


def rng_for(seed: int, name: str = "") -> np.random.Generator:
    """A NumPy generator for the stream ``name`` of run ``seed``."""
    if not name:
        return np.random.default_rng(seed)
    return np.random.default_rng(np.random.SeedSequence([seed, _stream_key(name)]))


def torch_generator(seed: int, name: str = "", device: str = "cpu"):
    """A ``torch.Generator`` on ``device`` for the stream ``name`` of run ``seed``."""
    import torch

    g = torch.Generator(device=device)
    g.manual_seed(int(rng_for(seed, name).integers(0, 2**63 - 1)))
    return g
