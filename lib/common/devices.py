"""Device choice: "auto" takes CUDA when present, else the CPU. Nothing assumes a GPU."""
from __future__ import annotations

import re

_ALLOWED = "'auto', 'cpu', 'cuda' or 'cuda:N'"


def resolve_device(device: str = "auto") -> str:
    """Return a torch device string for ``device`` ("auto" | "cpu" | "cuda" | "cuda:N")."""
    if not isinstance(device, str) or not re.fullmatch(r"auto|cpu|cuda(:\d+)?", device):
        raise ValueError(f"parameter 'device' got {device!r}; allowed: {_ALLOWED}")
    if device == "cpu":
        return "cpu"
    try:
        import torch

        has_cuda = torch.cuda.is_available()
        n_cuda = torch.cuda.device_count() if has_cuda else 0
    except ImportError:  # torch is a dependency, but keep numpy-only papers importable without it
        has_cuda, n_cuda = False, 0
    if device == "auto":
        return "cuda" if has_cuda else "cpu"
    index = int(device.split(":")[1]) if ":" in device else 0
    if not has_cuda or index >= n_cuda:
        raise ValueError(
            f"parameter 'device' got {device!r}, but this machine has {n_cuda} CUDA device(s); "
            f"use 'auto' or 'cpu'"
        )
    return device
