"""A run's configuration: the common parameters every notebook has, plus the paper's own knobs.

Each paper's ``lib.<slug>.config(...)`` validates its own parameters and then calls :func:`make_config`,
which validates ``mode``, ``seed``, ``out_dir`` and ``device``, merges the sizes of the mode, seeds every
global generator, applies the suite's figure style and prints the configuration.
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np

from .devices import resolve_device
from .params import check_choice, check_seed
from .paths import resolve_out_dir
from .seeding import rng_for, seed_everything, torch_generator

MODES = ("quick", "full")
_VALIDATING = contextvars.ContextVar("iclr26_validating", default=False)


@contextlib.contextmanager
def validation_only():
    """Inside this block :func:`make_config` only validates: it prints nothing, seeds nothing and creates no
    folder. The runner calls a paper's ``config(...)`` this way to refuse bad ``-p`` values before any run."""
    token = _VALIDATING.set(True)
    try:
        yield
    finally:
        _VALIDATING.reset(token)


def validating() -> bool:
    """Whether the current ``config(...)`` call only validates (see :func:`validation_only`): a paper's config
    that would do expensive work after validating (load a large file, train) can skip it then."""
    return _VALIDATING.get()


@dataclass
class RunConfig:
    """Everything a notebook run needs; the paper's knobs are attributes too (``cfg.n_samples``)."""

    paper: str
    mode: str
    seed: int
    out_dir: Path
    device: str
    params: dict = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        params = self.__dict__.get("params", {})
        if name in params:
            return params[name]
        raise AttributeError(f"{type(self).__name__} for {self.__dict__.get('paper')!r} has no parameter {name!r}")

    @property
    def figures_dir(self) -> Path:
        return self.out_dir / "figures"

    def rng(self, name: str = "") -> np.random.Generator:
        """An independent NumPy stream named ``name`` (same seed and name, same draws)."""
        return rng_for(self.seed, name)

    def torch_generator(self, name: str = "", device: Optional[str] = None):
        return torch_generator(self.seed, name, device or "cpu")

    def ledger(self):
        from .claims import ClaimsLedger

        return ClaimsLedger(paper=self.paper, mode=self.mode, seed=self.seed, out_dir=self.out_dir)

    def as_dict(self) -> dict:
        return {
            "paper": self.paper,
            "mode": self.mode,
            "seed": self.seed,
            "out_dir": str(self.out_dir),
            "device": self.device,
            **self.params,
        }

    def describe(self) -> str:
        d = self.as_dict()
        width = max(len(k) for k in d)
        return "\n".join(f"{k:<{width}} : {v}" for k, v in d.items())


def make_config(
    paper: str,
    *,
    mode: str = "quick",
    seed: int = 0,
    out_dir=None,
    device: str = "auto",
    sizes: Optional[Mapping[str, Mapping[str, Any]]] = None,
    verbose: bool = True,
    **params: Any,
) -> RunConfig:
    """Validate the common parameters, merge ``sizes[mode]`` with ``params`` and seed everything.

    ``sizes`` maps each mode to its default sizes; a paper parameter passed as ``None`` takes the mode's
    value, any other value overrides it.
    """
    check_choice("mode", mode, MODES)
    seed = check_seed("seed", seed)
    resolved_device = resolve_device(device)
    merged: dict = dict((sizes or {}).get(mode, {}))
    for key, value in params.items():
        if value is not None or key not in merged:
            merged[key] = value
    if _VALIDATING.get():
        if out_dir is not None and (not isinstance(out_dir, (str, Path)) or str(out_dir) == ""):
            raise ValueError(f"parameter 'out_dir' got {out_dir!r}; allowed: None or a folder path (str)")
        return RunConfig(paper=paper, mode=mode, seed=seed, out_dir=Path(out_dir or "."), device=resolved_device,
                         params=merged)
    out = resolve_out_dir(paper, out_dir)
    seed_everything(seed)
    from .figures import set_style

    set_style()
    cfg = RunConfig(paper=paper, mode=mode, seed=seed, out_dir=out, device=resolved_device, params=merged)
    if verbose:
        print(cfg.describe())
    return cfg
