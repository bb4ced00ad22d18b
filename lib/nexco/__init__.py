"""NEXCO (ICLR 2026): native adaptive solution expansion for masked-diffusion combinatorial optimisation.

Modules: ``instances`` (ER graphs, TSP points, batches, storage), ``solvers`` (CP-SAT, brute force, min-degree
greedy, OR-Tools routing, 2-opt), ``gnn`` (the edge-gated GNN denoiser), ``diffusion`` (states, masking schedules,
training), ``decode`` (GP / LC / schedule-bound / adaptive decoders and the feasibility projections), ``data``
(loading the shipped sets), ``experiments`` (one function per figure), ``plots``, ``make_data`` (regenerates
``data/nexco/``).
"""
from __future__ import annotations

import torch  # noqa: F401  (imported before config() runs, so that lib.common's seeding also seeds torch)

from lib.common import check_bool, check_choice, check_float, check_int, make_config

from .data import load_mis, load_tsp
from .decode import decode_mis, decode_tsp, project_mis, project_tsp_graph
from .diffusion import mask_states, train_denoiser
from .experiments import (
    ablations,
    adaptivity,
    benchmark_view,
    claims_values,
    load_data,
    mis_benchmark,
    scale_study,
    time_agnostic_gap,
    train_models,
    training_table,
    trajectory,
)
from .gnn import EdgeGatedGNN

SLUG = "nexco"

SIZES = {
    "quick": {
        "n_train": 2000,  # MIS-ER50 training graphs (CP-SAT optimal labels)
        "n_test": 128,
        "n_latency": 8,  # test graphs decoded one at a time for the latency (batch size 1) column (descriptive)
        "train_steps": 400,
        "hidden": 32,
        "layers": 4,
        "batch_size": 32,
        "lr": 2e-3,
        "models": ("nexco", "twin"),
        "schedule_rounds": (2, 4, 8),
        "tau_grid": (0.7, 0.8, 0.9, 0.95),
        "scale": None,  # Figure 5 (ER-100, TSP-20/50) runs in full mode only
    },
    "full": {
        "n_train": 2000,
        "n_test": 256,
        "n_latency": 64,
        "train_steps": 2500,
        "hidden": 64,
        "layers": 6,
        "batch_size": 32,
        "lr": 1e-3,
        "models": ("nexco", "twin", "iid", "gpnet"),
        "schedule_rounds": (2, 4, 8, 16),
        "tau_grid": (0.7, 0.8, 0.9, 0.95, 0.99),
        "scale": {"mis_steps": 2000, "tsp20_steps": 2000, "tsp50_steps": 1500, "tsp_hidden": 64, "tsp_layers": 6,
                  "knn": 10},
    },
}


def _checkpoint_matches(mode, train_steps, hidden, layers, masking) -> list:
    """The parameters that keep a run from using the shipped quick denoisers (empty: it can use them)."""
    q = SIZES["quick"]
    bad = [] if mode == "quick" else ["mode"]
    bad += [k for k, v in (("train_steps", train_steps), ("hidden", hidden), ("layers", layers))
            if v is not None and v != q[k]]
    return bad + ([] if masking == "expansion" else ["masking"])


def config(mode="quick", seed=0, out_dir=None, device="auto", pretrained=None, regenerate=False, n_test=None,
           train_steps=None, hidden=None, layers=None, masking="expansion", tau=0.9, kmin_frac=0.02, verbose=True):
    """Validate the notebook's parameters and build the run configuration.

    pretrained : None (load the shipped quick denoisers, ``data/nexco/quick_denoisers.npz``, when the run's
        training recipe is theirs: quick mode with its default sizes and masking; otherwise train here), True (load
        them; an error when the recipe differs) or False (train here, with this seed).
    regenerate : rebuild the test graphs and their CP-SAT labels with the data script and compare them with the
        shipped file (adds a few seconds per 100 graphs).
    n_test : MIS-ER50 test graphs (None: 128 quick, a seeded random half of the 256 shipped; 256 full; at most 256).
    train_steps, hidden, layers : the denoisers' training steps (batch 32), width and depth (None: the mode's).
    masking : "expansion" (option B, solution-expansion training) or "iid" (option A, plain MDLM masking).
    tau : NEXCO's confidence threshold for the candidate set; kmin_frac : the guaranteed progress k_min / N.
    """
    check_bool("pretrained", pretrained, allow_none=True)
    check_bool("regenerate", regenerate)
    check_int("n_test", n_test, lo=8, hi=256, allow_none=True)
    check_int("train_steps", train_steps, lo=1, hi=100_000, allow_none=True)
    check_int("hidden", hidden, lo=4, hi=512, allow_none=True)
    check_int("layers", layers, lo=1, hi=24, allow_none=True)
    check_choice("masking", masking, ["expansion", "iid"])
    check_float("tau", tau, lo=0.5, hi=1.0)
    check_float("kmin_frac", kmin_frac, lo=0.0, hi=1.0, hi_open=False)
    differ = _checkpoint_matches(mode, train_steps, hidden, layers, masking)
    if pretrained and differ:
        raise ValueError(f"parameter 'pretrained' got True, but the shipped denoisers were trained with quick mode's "
                         f"defaults and this run changes {differ}; allowed: None (train when needed) or False")
    use = (not differ) if pretrained is None else bool(pretrained)
    return make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=verbose,
                       pretrained=use, regenerate=regenerate, n_test=n_test, train_steps=train_steps, hidden=hidden, layers=layers,
                       masking=masking, tau=float(tau), kmin_frac=float(kmin_frac))


__all__ = [
    "SLUG", "SIZES", "config", "EdgeGatedGNN", "train_denoiser", "mask_states", "decode_mis", "decode_tsp",
    "project_mis", "project_tsp_graph", "load_mis", "load_tsp", "load_data", "train_models", "training_table",
    "mis_benchmark", "benchmark_view", "claims_values", "adaptivity", "trajectory", "ablations", "scale_study",
    "time_agnostic_gap",
]
