"""Device choice: "auto" takes CUDA when present, else the CPU. Nothing assumes a GPU."""
from __future__ import annotations

import os
import re
import shutil

_ALLOWED = "'auto', 'cpu', 'cuda' or 'cuda:N'"


def _nvidia_driver_present() -> bool:
    return os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidia0") or bool(
        shutil.which("nvidia-smi")
    )


def resolve_device(device: str = "auto") -> str:
    """Return a torch device string for ``device`` ("auto" | "cpu" | "cuda" | "cuda:N")."""
    if not isinstance(device, str) or not re.fullmatch(r"auto|cpu|cuda(:\d+)?", device):
        raise ValueError(f"parameter 'device' got {device!r}; allowed: {_ALLOWED}")
    if device == "cpu":
        return "cpu"
    if device == "auto" and not _nvidia_driver_present():
        return "cpu"  # no driver: CPU, without paying for a torch import in numpy-only notebooks
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
