"""Evaluating Data Influence in Meta Learning (Ren, Xie, Yang, Ding, Hu, Wang; ICLR 2026): task-IF and
instance-IF for a proximal bilevel meta-learner, reconstructed from the paper's abstract (no code was released).

Modules: :mod:`.data` (few-shot tasks from scikit-learn digits or MNIST's IDX files downsampled to 8x8, task and
label noise), :mod:`.bilevel` (setting A: inner/outer solves, closed-form Hessians and third-order terms, batched
warm-started retraining), :mod:`.influence` (task-IF, instance-IF, CG/Neumann IHVPs, baselines),
:mod:`.experiments` (one function per figure), :mod:`.plots`, :mod:`.make_data` (the IDX fixture).
"""
from __future__ import annotations

from lib.common import check_float, check_int, check_path, make_config
from lib.common.userfiles import UserFileLoader

from .data import MNIST_EXPECTED

SLUG = "meta_influence"

# The user-file parameter (lib.common.userfiles contract): MNIST's four IDX files in one folder.
LOADERS = {
    "data_path": UserFileLoader(
        "data_path", "lib.meta_influence.data:check_mnist", fixture="data/meta_influence/mnist", kind="folder",
        target="train-images-idx3-ubyte", expected=MNIST_EXPECTED,
        skip={"gzip": "MNIST is distributed gzip-compressed (train-images-idx3-ubyte.gz): the reader decompresses "
                      "gzip itself, so a gzipped copy of a valid file is valid"}),
}

SIZES = {
    "quick": {"n_tasks": 40, "n_test_tasks": 20, "n_loto": 40, "n_loo": 20, "n_random": 10,
              "clean_fracs": (0.1, 0.2), "cg_iters": 100, "neumann_terms": 1000, "cg_check": 50,
              "neumann_check": 100, "b_tasks": 0, "b_test_tasks": 0, "b_loto": 0,
              "sine_tasks": 0, "sine_test_tasks": 0, "sine_loto": 0},
    "full": {"n_tasks": 200, "n_test_tasks": 50, "n_loto": 50, "n_loo": 50, "n_random": 10,
             "clean_fracs": (0.05, 0.1, 0.2, 0.3), "cg_iters": 150, "neumann_terms": 3000, "cg_check": 50,
             "neumann_check": 100, "b_tasks": 40, "b_test_tasks": 20, "b_loto": 20,
             "sine_tasks": 50, "sine_test_tasks": 20, "sine_loto": 25},
}


def config(mode="quick", seed=0, out_dir=None, device="auto", data_path=None, n_tasks=None, n_test_tasks=None,
           mu=1.0, rho=1.0, n_way=5, k_shot=5, q_shot=10, task_noise=0.1, instance_noise=0.1, n_loo=None,
           verbose=True):
    """Validate the notebook's parameters and build the run configuration.

    data_path : None (scikit-learn digits) or a folder with MNIST's four IDX files (plain or .gz), read at 8x8.
    n_tasks, n_test_tasks : meta-train / meta-test tasks (None: 40 / 20 quick, 200 / 50 full).
    mu : proximal strength of the inner problem; rho : outer ridge; n_way, k_shot, q_shot : task shape;
    task_noise : fraction of meta-train tasks with shuffled labels; instance_noise : fraction of the other tasks'
    support labels flipped; n_loo : support points re-trained without (instance-LOO).
    """
    check_int("n_tasks", n_tasks, lo=5, hi=2000, allow_none=True)
    check_int("n_test_tasks", n_test_tasks, lo=2, hi=1000, allow_none=True)
    mu = check_float("mu", mu, lo=1e-3, hi=1e4)
    rho = check_float("rho", rho, lo=1e-6, hi=1e3)
    n_way = check_int("n_way", n_way, lo=2, hi=10)
    k_shot = check_int("k_shot", k_shot, lo=1, hi=50)
    q_shot = check_int("q_shot", q_shot, lo=1, hi=100)
    task_noise = check_float("task_noise", task_noise, lo=0.0, hi=0.9)
    instance_noise = check_float("instance_noise", instance_noise, lo=0.0, hi=0.9)
    check_int("n_loo", n_loo, lo=4, hi=1000, allow_none=True)
    data_path = check_path("data_path", data_path)
    if data_path is not None:
        from lib.common.userfiles import check_user_file

        check_user_file(LOADERS["data_path"], data_path)  # a malformed folder is refused before any work
        data_path = str(data_path)
    cfg = make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=verbose,
                      data_path=data_path, n_tasks=n_tasks, n_test_tasks=n_test_tasks, mu=mu, rho=rho, n_way=n_way,
                      k_shot=k_shot, q_shot=q_shot, task_noise=task_noise, instance_noise=instance_noise,
                      n_loo=n_loo)
    cfg.params["n_loto"] = min(cfg.params["n_loto"], cfg.params["n_tasks"])
    return cfg


__all__ = ["SLUG", "SIZES", "LOADERS", "config"]
