"""Shared building blocks of the suite: what three or more papers use.

Notebooks reach everything through a paper's ``config(...)`` (which calls :func:`make_config`),
the claims ledger and the figure helper::

    cfg = lib.<slug>.config(mode=mode, seed=seed, out_dir=out_dir, device=device, ...)
    ledger = cfg.ledger()
    ...
    save_figure(fig, "fig1_convergence", cfg)
    ledger.check("C1", ...)
    ledger.finalize()
"""
import os as _os

# Nothing in the suite may wait on a network: set the hubs' offline switches before anything imports them.
for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
    _os.environ.setdefault(_var, "1")

from .claims import ClaimsLedger, ClaimsNotReproduced  # noqa: E402
from .config import MODES, RunConfig, make_config  # noqa: E402
from .devices import resolve_device  # noqa: E402
from .figures import save_figure, set_style  # noqa: E402
from .params import (  # noqa: E402
    check_bool,
    check_choice,
    check_float,
    check_int,
    check_path,
    check_seed,
)
from .paths import data_dir, project_root, reports_dir, resolve_out_dir  # noqa: E402
from .progress import progress  # noqa: E402
from .seeding import rng_for, seed_everything, torch_generator  # noqa: E402
from .threads import limit_threads  # noqa: E402

__all__ = [
    "MODES",
    "ClaimsLedger",
    "ClaimsNotReproduced",
    "RunConfig",
    "check_bool",
    "check_choice",
    "check_float",
    "check_int",
    "check_path",
    "check_seed",
    "data_dir",
    "limit_threads",
    "make_config",
    "progress",
    "project_root",
    "reports_dir",
    "resolve_device",
    "resolve_out_dir",
    "rng_for",
    "save_figure",
    "seed_everything",
    "set_style",
    "torch_generator",
]
