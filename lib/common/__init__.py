"""Shared building blocks of the suite: what three or more papers use.

Notebooks reach everything through a paper's ``config(...)`` (which calls :func:`make_config`),
the claims ledger and the figure helper::

    cfg = lib.<slug>.config(mode=mode, seed=seed, out_dir=out_dir, device=device, ...)
    ledger = cfg.ledger()
    ...
    save_figure(fig, "fig1_convergence", cfg)
    ledger.check("C1", ...)
    ledger.finalize()

Further shared modules, imported where needed: :mod:`.optim` (torch.optim's Adam/AdamW/SGD without its start-up
cost), :mod:`.userfiles` (the contract for user-supplied files), :mod:`.additive` (neural additive shape functions),
:mod:`.lm_hooks` (reading and editing a causal LM's residual stream), :mod:`.templates` (a seeded template engine
with sentence and token labels), :mod:`.heavy_tails` (heavy-tailed noise and clipped SGD, when present).

Language-model papers share an offline stack (no hub, no downloads): :mod:`.text_corpus` (docstrings and code
lines of the Python standard library, parsed with ``ast``), :mod:`.bpe` (byte-level BPE tokenizers trained on it,
shipped under ``data/common/``) and :mod:`.tiny_lm` (a tiny GPT-2 from a ``transformers`` config, a step-bounded
training loop, and ``load_lm(model_name)`` that reaches the hub only when a user names a hub model).
"""
import os as _os

# Nothing in the suite may wait on a network: set the hubs' offline switches before anything imports them.
for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
    _os.environ.setdefault(_var, "1")

# Libraries that import tqdm.auto inside a kernel (transformers does) warn "IProgress not found. Please update jupyter
# and ipywidgets" into the first cell's output when ipywidgets is absent; the suite's own bars are plain-text tqdm, so
# the advice does not apply: drop that one warning.
import warnings as _warnings

_warnings.filterwarnings("ignore", message="IProgress not found")


def _quiet_kernel_shutdown() -> None:
    """Inside a Jupyter kernel: drop ipykernel's "KeyboardInterrupt caught in kernel" log line, which jupyter_client's
    shutdown (it sends SIGINT before the shutdown request) prints after every successful plain papermill run. An
    interrupt of a running cell still raises KeyboardInterrupt in the cell, as always."""
    import logging
    import sys

    if "ipykernel" not in sys.modules:
        return

    class _DropShutdownInterrupt(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            return not str(record.msg).startswith("KeyboardInterrupt caught in kernel")

    logger = logging.getLogger("IPKernelApp")
    if not any(type(f).__name__ == "_DropShutdownInterrupt" for f in logger.filters):
        logger.addFilter(_DropShutdownInterrupt())


_quiet_kernel_shutdown()

from .claims import ClaimsLedger, ClaimsNotReproduced  # noqa: E402
from .config import MODES, RunConfig, make_config  # noqa: E402
from .devices import resolve_device  # noqa: E402
from .figures import plain_log_labels, save_figure, set_style  # noqa: E402
from .params import (  # noqa: E402
    check_bool,
    check_choice,
    check_float,
    check_int,
    check_path,
    check_seed,
)
from .paths import data_dir, project_root, reports_dir, resolve_out_dir, update_provenance  # noqa: E402
from .progress import progress  # noqa: E402
from .seeding import rng_for, seed_everything, torch_generator  # noqa: E402
from .threads import limit_threads  # noqa: E402
from . import bpe, text_corpus, tiny_lm  # noqa: E402  (light at import: tokenizers/transformers load lazily)
# heavier shared pieces are imported by the papers that need them, not here (torch at import time costs ~1.5 s):
#   lib.common.optim (Adam/AdamW/SGD), lib.common.additive (neural additive shape functions), lib.common.lm_hooks
#   (residual-stream hooks), lib.common.templates (seeded template engine), lib.common.userfiles (user-file contract)
from .bpe import encode_corpus, load_bpe  # noqa: E402
from .text_corpus import stdlib_corpus  # noqa: E402
from .tiny_lm import load_lm, make_gpt2, train_lm  # noqa: E402

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
    "bpe",
    "data_dir",
    "encode_corpus",
    "limit_threads",
    "load_bpe",
    "load_lm",
    "make_config",
    "make_gpt2",
    "progress",
    "project_root",
    "reports_dir",
    "resolve_device",
    "resolve_out_dir",
    "update_provenance",
    "rng_for",
    "save_figure",
    "plain_log_labels",
    "seed_everything",
    "set_style",
    "stdlib_corpus",
    "text_corpus",
    "tiny_lm",
    "torch_generator",
    "train_lm",
]
