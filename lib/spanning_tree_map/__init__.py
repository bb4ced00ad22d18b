"""From Fields to Random Trees (ICLR 2026): MAP on sparse MRFs by merging exact inference on uniform spanning trees.

Modules: ``model`` (PairwiseMRF), ``io`` (UAI .uai reader and writer), ``generators`` (grids, Ising, ER, PCI-like),
``trees`` (effective resistance, Wilson's sampler, batched exact tree inference), ``spt`` (the method),
``baselines`` (LBP, TRW, ICM, mean field), ``exact`` (MILP with HiGHS, brute force), ``experiments`` (one function per
figure), ``plots``, ``make_data`` (regenerates the .uai fixtures under ``data/spanning_tree_map/``).
"""
from __future__ import annotations


from lib.common import check_choice, check_float, check_int, check_path, make_config
from lib.common.userfiles import UserFileLoader

from .baselines import icm, lbp_minsum, mean_field, trw
from .exact import brute_force, lp_relaxation, map_milp
from .experiments import (
    ALL_METHODS,
    FILE_GROUP,
    USER_GROUP,
    MAIN_METHODS,
    TREE_COUNTS,
    VARIANTS,
    ablation,
    cells_won,
    convergence,
    convergence_table,
    density_slope,
    density_summary,
    er_density,
    family_comparison,
    gap_table,
    instance_table,
    grid_benchmark,
    pooled_ratio,
    tree_count_table,
    uai_family,
    uai_pci,
    ust_picture,
    variant_table,
    win_table,
)
from .generators import er_potts, grid_potts, ising_grid, pci_like
from .io import UAI_EXPECTED, read_uai, read_uai_folder, write_uai
from .model import PairwiseMRF
from .spt import spt_map
from .trees import effective_resistance, sample_trees, wilson_ust

SLUG = "spanning_tree_map"

# The user-file parameter (lib.common.userfiles contract): a .uai file or a folder of them.
LOADERS = {
    "data_path": UserFileLoader("data_path", "lib.spanning_tree_map.io:check_uai_data",
                                fixture="data/spanning_tree_map/mixed_domains_3x3.uai", expected=UAI_EXPECTED),
}

SIZES = {
    "quick": {
        "grid_size": 8,  # 8 x 8 grids, K = 4 labels
        "n_instances": 4,  # per (family, coupling) cell
        "milp_time_limit": 10.0,  # HiGHS seconds per gated MILP (a safety limit: gated instances take about 1 s)
        "milp_gap_max": 2.0,  # run the MILP only when best energy - LP bound <= this (None: always)
        "grid_families": ("attractive", "mixed"),
        "couplings": (1.0, 3.0),
        "n_labels": 4,
        "bp_iters": 50,
        "er_n": 40,
        "er_labels": 3,
        "er_kind": "mixed",
        "er_coupling": 3.0,
        "er_degrees": (2, 4, 7, 10),
        "n_er": 8,  # per target degree (C4's slope: 4 degrees x 8 instances)
        "ablation_instances": 2,  # per family, at the strongest coupling
        "ising_size": 10,
        "ising_sigmas": (1.0, 3.0),
        "n_ising": 1,
        "pci_sizes": (40,),
        "n_pci": 2,
        "pci_labels": 6,
        "ust_samples": 2000,
    },
    "full": {
        "grid_size": 10,
        "n_instances": 6,
        "milp_time_limit": 20.0,
        "milp_gap_max": None,
        "grid_families": ("attractive", "mixed", "frustrated"),
        "couplings": (0.5, 1.0, 2.0, 3.0),
        "n_labels": 4,
        "bp_iters": 50,
        "er_n": 60,
        "er_labels": 3,
        "er_kind": "mixed",
        "er_coupling": 3.0,
        "er_degrees": (2, 3, 4, 6, 8, 10),
        "n_er": 6,
        "ablation_instances": 6,
        "ising_size": 20,
        "ising_sigmas": (1.0, 2.0, 3.0),
        "n_ising": 3,
        "pci_sizes": (100, 200),
        "n_pci": 3,
        "pci_labels": 6,
        "ust_samples": 20000,
    },
}


def config(mode="quick", seed=0, out_dir=None, device="auto", data_path=None, uai_values="potential", n_trees=20,
           n_iters=40, spt_damping=0.5, spt_beta=1.0, grid_size=None, n_instances=None, milp_time_limit=None,
           verbose=True):
    """Validate the notebook's parameters and build the run configuration.

    data_path : None (the generated fixtures under data/spanning_tree_map/) or a .uai file or a folder of them.
    uai_values : "potential" (UAI standard: tables hold potentials) or "energy" (tables hold energies).
    n_trees, n_iters : SPT's number of sampled trees and outer iterations (the authors' defaults: 20 and 40).
    spt_damping : eta in SPT's node update u_i = theta_i + eta * mean min-marginal (min-sum variant).
    spt_beta : inverse temperature of the sum-product variants (the authors' code: 1).
    grid_size, n_instances : None takes the mode's value (quick 8 and 4, full 10 and 6).
    milp_time_limit : HiGHS seconds per MILP (None: 10 s quick, 20 s full). Quick mode solves the MILP only on
        instances whose LP gap is at most 2 (they close in about a second), so its references do not depend on the
        machine's speed; full mode tries every instance that the LP bound does not already certify.
    """
    check_choice("uai_values", uai_values, ("potential", "energy"))
    check_int("n_trees", n_trees, lo=1, hi=500)
    check_int("n_iters", n_iters, lo=1, hi=1000)
    check_float("spt_damping", spt_damping, lo=0.0, hi=1.0, hi_open=True)
    check_float("spt_beta", spt_beta, lo=0.0, lo_open=True)
    check_int("grid_size", grid_size, lo=3, hi=60, allow_none=True)
    check_int("n_instances", n_instances, lo=1, hi=100, allow_none=True)
    check_float("milp_time_limit", milp_time_limit, lo=0.0, lo_open=True, allow_none=True)
    data_path = check_path("data_path", data_path)
    if data_path is not None:
        read_uai_folder(data_path, values=uai_values)  # fail now, with the reader's message, if a file is malformed
        data_path = str(data_path)
    return make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=verbose,
                       data_path=data_path, uai_values=uai_values, n_trees=n_trees, n_iters=n_iters,
                       spt_damping=float(spt_damping), spt_beta=float(spt_beta), grid_size=grid_size,
                       n_instances=n_instances, milp_time_limit=milp_time_limit)


__all__ = [
    "SLUG", "SIZES", "LOADERS", "config", "PairwiseMRF", "read_uai", "write_uai", "read_uai_folder", "grid_potts", "ising_grid",
    "er_potts", "pci_like", "effective_resistance", "wilson_ust", "sample_trees", "spt_map", "lbp_minsum", "trw", "icm",
    "mean_field", "map_milp", "lp_relaxation", "brute_force", "grid_benchmark", "gap_table", "win_table",
    "er_density", "density_summary", "density_slope", "uai_pci", "convergence", "convergence_table", "ablation",
    "tree_count_table", "variant_table", "ust_picture", "pooled_ratio", "cells_won", "MAIN_METHODS", "ALL_METHODS",
    "TREE_COUNTS", "VARIANTS", "FILE_GROUP", "USER_GROUP", "instance_table", "family_comparison", "uai_family",
]
