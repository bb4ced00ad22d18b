"""Reducing Contextual Stochastic Bilevel Optimization via Structured Function Approximation (Bouscary, Zhang,
Amin; ICLR 2026), reimplemented with numpy (task A, the bases, the exact references) and torch (task B).

Modules: :mod:`.bases` (Chebyshev, Fourier, monomial and one-hot feature maps; lambda_min(E[Phi Phi^T])),
:mod:`.sta` (task A: the two-link inverse traffic assignment, y* and the exact references, W*(x) by Newton),
:mod:`.stocbio` (StocBiO on the reduced problem, many lanes side by side on common minibatches), :mod:`.hpo`
(task B: temperature-context hyperparameter optimisation in torch), :mod:`.data` (corrupted digits, MNIST's IDX
reader), :mod:`.experiments` (one function per figure and claim), :mod:`.plots`, :mod:`.make_data` (the IDX fixture).
"""
from __future__ import annotations

from lib.common import check_float, check_int, check_path, make_config
from lib.common.userfiles import UserFileLoader

from .data import MNIST_EXPECTED

SLUG = "csbo_chebyshev"

# The user-file parameter (lib.common.userfiles contract): MNIST's four IDX files in one folder.
LOADERS = {
    "data_path": UserFileLoader(
        "data_path", "lib.csbo_chebyshev.data:check_mnist", fixture="data/csbo_chebyshev/mnist", kind="folder",
        target="train-images-idx3-ubyte", expected=MNIST_EXPECTED,
        skip={"gzip": "MNIST is distributed gzip-compressed (train-images-idx3-ubyte.gz): the reader decompresses "
                      "gzip itself, so a gzipped copy of a valid file is valid"}),
}

CONFIGS_A_QUICK = [("cheb", 3), ("cheb", 5), ("cheb", 10), ("fourier", 5), ("mono", 10), ("onehot", 5), ("onehot", 50)]
CONFIGS_A_FULL = CONFIGS_A_QUICK + [("mono", 5), ("fourier", 10), ("onehot", 3), ("onehot", 10), ("onehot", 100)]

SIZES = {
    "quick": {"T_a": 200, "D_a": 10, "Q_a": 10, "batch_a": 32, "alphas_a": (0.25, 0.5, 1.0), "seeds_a": 1,
              "configs_a": CONFIGS_A_QUICK,
              "T_b": 60, "D_b": 5, "Q_b": 5, "batch_b": 4, "alphas_b": (1e5,), "seeds_b": 1,
              "configs_b": [("cheb", 1), ("cheb", 5), ("onehot", 5)],
              "cond_N": 20, "fig4_cheb": list(range(1, 21)), "fig4_onehot": [1, 2, 3, 5, 10, 20, 50, 100],
              "fig4_mono": list(range(1, 11))},
    "full": {"T_a": 2000, "D_a": 10, "Q_a": 10, "batch_a": 32, "alphas_a": (0.25, 0.5, 1.0), "seeds_a": 5,
             "configs_a": CONFIGS_A_FULL,
             "T_b": 400, "D_b": 5, "Q_b": 5, "batch_b": 4, "alphas_b": (1e4, 1e5), "seeds_b": 3,
             "configs_b": [("cheb", 1), ("cheb", 3), ("cheb", 5), ("cheb", 10), ("mono", 5), ("onehot", 5),
                           ("onehot", 10)],
             "cond_N": 30, "fig4_cheb": list(range(1, 31)), "fig4_onehot": [1, 2, 3, 5, 10, 20, 50, 100, 200],
             "fig4_mono": list(range(1, 13))},
}


def config(mode="quick", seed=0, out_dir=None, device="auto", data_path=None, obs_noise=0.01, T_a=None, T_b=None,
           seeds_a=None, seeds_b=None, verbose=True):
    """Validate the notebook's parameters and build the run configuration.

    data_path : None (scikit-learn digits for task B) or a folder with MNIST's four IDX files (plain or .gz).
    obs_noise : standard deviation of the observed flows' noise in task A (the brief's design used 0.05).
    T_a, T_b : outer StocBiO steps of task A / task B; seeds_a, seeds_b : claim replicas (minibatch streams in task
    A; data draws and streams in task B). Knobs left at None take the mode's value (``SIZES``).
    """
    obs_noise = check_float("obs_noise", obs_noise, lo=0.0, hi=1.0)
    check_int("T_a", T_a, lo=10, hi=100000, allow_none=True)
    check_int("T_b", T_b, lo=2, hi=100000, allow_none=True)
    check_int("seeds_a", seeds_a, lo=1, hi=50, allow_none=True)
    check_int("seeds_b", seeds_b, lo=1, hi=20, allow_none=True)
    data_path = check_path("data_path", data_path)
    if data_path is not None:
        from lib.common.userfiles import check_user_file

        check_user_file(LOADERS["data_path"], data_path)  # a malformed folder is refused before any work
        data_path = str(data_path)
    return make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=verbose,
                       data_path=data_path, obs_noise=obs_noise, T_a=T_a, T_b=T_b, seeds_a=seeds_a, seeds_b=seeds_b)


__all__ = ["SLUG", "SIZES", "LOADERS", "config"]
