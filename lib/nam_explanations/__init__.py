"""Provably Explaining Neural Additive Models (Bassan, Elboher, Ladner, Şahin, Křetínský, Althoff, Katz; ICLR 2026),
reconstructed: no official code exists and the paper's body was not readable, so the algorithm follows the abstract's
complexity claims (see the brief and the notebook's Method section).

Modules: :mod:`.data` (scikit-learn sets, the additive generator, the user-CSV reader), :mod:`.model` (NAM training
on ``lib.common.additive.GroupMLPs`` and its numpy export), :mod:`.univariate` (exact pieces, IBP, bisection with a
1-D verifier), :mod:`.verify` (additive oracle, whole-NAM MILP on ``scipy.optimize.milp``), :mod:`.explain`
(ours, deletion, brute force, sampling), :mod:`.experiments`, :mod:`.plots`, :mod:`.make_data` (the CSV fixture).
"""
from __future__ import annotations


from lib.common import MODES, check_choice, check_float, check_int, check_path, make_config
from lib.common.userfiles import UserFileLoader

from .data import CSV_EXPECTED, DATASETS

SLUG = "nam_explanations"
DOMAINS = ("ball", "full")

# The user-file parameter (lib.common.userfiles contract): a headed CSV with a 0/1 target column.
LOADERS = {
    "data_path": UserFileLoader("data_path", "lib.nam_explanations.data:read_tabular",
                                fixture="data/nam_explanations/tiny_tabular.csv", expected=CSV_EXPECTED),
}

SIZES = {
    "quick": {
        "datasets": ["breast_cancer", "wine"],
        "synthetic_sizes": [8, 16, 32, 64],
        "hidden": 16, "steps": 200, "lr": 1e-2, "feature_dropout": 0.1, "train_seeds": 1,
        "steps_synthetic": 100, "n_samples_synthetic": 300,
        "n_points": 30, "n_points_synthetic": 10, "n_orders": 5, "n_samples": 200, "brute_max_n": 16,
        "milp_points": 5, "milp_synthetic_sizes": [8, 16], "milp_points_synthetic": 2, "milp_time_limit": 2.0,
        "n_points_bisect": 5, "deltas": [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6],
        "eps_sizes": [0.1], "eps_sampling": [0.1, 0.2], "sample_sizes": [50, 200, 1000],
    },
    "full": {
        "datasets": ["breast_cancer", "wine", "digits38"],
        "synthetic_sizes": [8, 16, 32, 64, 128, 256],
        "hidden": 32, "steps": 600, "lr": 1e-2, "feature_dropout": 0.1, "train_seeds": 3,
        "steps_synthetic": 400, "n_samples_synthetic": 1000,
        "n_points": 100, "n_points_synthetic": 30, "n_orders": 10, "n_samples": 200, "brute_max_n": 16,
        "milp_points": 40, "milp_synthetic_sizes": [8, 16, 32, 64], "milp_points_synthetic": 5,
        "milp_time_limit": 2.0, "n_points_bisect": 20, "deltas": [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8],
        "eps_sizes": [0.05, 0.1, 0.2], "eps_sampling": [0.05, 0.1, 0.2], "sample_sizes": [50, 200, 1000, 5000],
    },
}


def config(mode="quick", seed=0, out_dir=None, device="auto", data_path=None, target="target", eps=0.1,
           domain="ball", delta=1e-4, n_points=None, milp_points=None, hidden=None, verbose=True):
    """Validate the notebook's parameters and build the run configuration.

    ``eps``: radius of the ℓ∞ ball of the free features' domain (``domain="ball"``; ``"full"``: the whole range
    [0, 1], the abductive setting). ``delta``: the bisection precision of the preprocessing. ``data_path``: a headed
    CSV of numeric features and a 0/1 column named ``target``; it adds a "user CSV" data set to Figure 1.
    """
    check_choice("mode", mode, MODES)
    eps = check_float("eps", eps, lo=1e-3, hi=1.0)
    check_choice("domain", domain, DOMAINS)
    delta = check_float("delta", delta, lo=1e-9, hi=0.5)
    check_int("n_points", n_points, lo=2, hi=1000, allow_none=True)
    check_int("milp_points", milp_points, lo=1, hi=1000, allow_none=True)
    check_int("hidden", hidden, lo=2, hi=128, allow_none=True)
    if not isinstance(target, str) or not target.strip():
        raise ValueError(f"parameter 'target' got {target!r}; allowed: the name of the CSV's 0/1 label column")
    data_path = check_path("data_path", data_path)
    if data_path is not None:
        from .data import read_tabular

        if data_path.is_dir():
            raise ValueError(f"parameter 'data_path' ({str(data_path)!r}): is a folder, not a file; expected "
                             f"{CSV_EXPECTED}")
        read_tabular(data_path, target)  # a malformed file (or a missing target column) is refused before any work
    base = SIZES[mode]
    datasets = list(base["datasets"]) + (["user"] if data_path is not None else [])
    eps_sizes = sorted(set(base["eps_sizes"]) | {eps})
    eps_sampling = sorted(set(base["eps_sampling"]) | {eps})
    return make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=verbose,
                       datasets=datasets, eps=eps, domain=domain, delta=delta, n_points=n_points,
                       milp_points=milp_points, hidden=hidden, eps_sizes=eps_sizes, eps_sampling=eps_sampling,
                       data_path=data_path, target=target)


__all__ = ["config", "SIZES", "LOADERS", "DATASETS", "DOMAINS"]
