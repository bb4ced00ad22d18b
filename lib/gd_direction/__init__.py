"""On the Convergence Direction of Gradient Descent (Chen, Li, Peng, Zhao; ICLR 2026), reproduced with numpy (the
toys and logistic regression, exact derivatives) and torch (small networks, ``torch.func`` HVPs and Hessians).

Modules: :mod:`.toys` (f_a, f_b, f_c with closed-form gradients and Hessians), :mod:`.dynamics` (GD, u_k, c_k,
eta_c, the windowed measurements), :mod:`.logreg` (l2-regularised logistic regression on breast cancer, the eta
sweep), :mod:`.nets` (flat-parameter CNN/MLP, GD/SGD-momentum/Adam, HVP power iteration, full Hessians),
:mod:`.data` (digits, the CIFAR-10 python-version reader), :mod:`.experiments` (one function per figure, the claims),
:mod:`.plots`, :mod:`.make_data` (the CIFAR-10-format fixture).
"""
from __future__ import annotations

from lib.common import check_float, check_int, check_path, make_config
from lib.common.userfiles import UserFileLoader

SLUG = "gd_direction"

QUICK_RATIOS = (0.3, 0.5, 0.7, 0.85, 0.95, 0.98, 1.02, 1.05, 1.1, 1.2, 1.3, 1.4)
FULL_RATIOS = tuple(sorted(set(round(0.3 + 0.05 * k, 2) for k in range(23)) | {0.98, 1.02}))

SIZES = {
    "quick": {"toy_steps": 2000, "ratios": QUICK_RATIOS, "n_starts": 5, "cnn_epochs": 15, "gd_steps": 150,
              "cnn_seeds": 1, "n_train": 512, "power_iters": 0, "mlp_samples": 64, "mlp_steps": 600,
              "sharp_every": 30},
    "full": {"toy_steps": 2000, "ratios": FULL_RATIOS, "n_starts": 5, "cnn_epochs": 100, "gd_steps": 1000,
             "cnn_seeds": 3, "n_train": 1797, "power_iters": 20, "mlp_samples": 256, "mlp_steps": 3000,
             "sharp_every": 30},
}

LOADERS = {
    "data_path": UserFileLoader(
        "data_path", "lib.gd_direction.data:check_cifar10", fixture="data/gd_direction/cifar-10-batches-py",
        kind="folder", target="data_batch_1",
        expected="the CIFAR-10 python version: cifar-10-batches-py with data_batch_1..5, test_batch, batches.meta"),
}


def config(mode="quick", seed=0, out_dir=None, device="auto", data_path=None, mu=1.0, n_starts=None,
           toy_steps=None, cnn_epochs=None, gd_steps=None, cnn_seeds=None, n_train=None, gd_lr=0.05, sgd_lr=0.01,
           adam_lr=1e-3, batch=128, power_iters=None, mlp_samples=None, mlp_width=7, mlp_lr=0.15, mlp_wd=1e-3,
           mlp_steps=None, verbose=True):
    """Validate the notebook's parameters and build the run configuration.

    data_path : None (scikit-learn digits) or CIFAR-10's python-version folder, used by Figure 4 only.
    mu : the l2 weight of the logistic problem (1.0: lambda_1/lambda_n ~ 0.42).
    n_starts : random starts per learning rate in Figure 3; toy_steps : GD steps on the toys.
    cnn_epochs, gd_steps, cnn_seeds, n_train, gd_lr, sgd_lr, adam_lr, batch : Figure 4's CNN training.
    mlp_samples, mlp_width, mlp_lr, mlp_wd, mlp_steps : Figure 5's MLP; power_iters : HVP power iterations for the
    CNN's final sharpness under GD (0: not measured).
    Knobs left at None take the mode's value (``SIZES``).
    """
    mu = check_float("mu", mu, lo=0.0, lo_open=True, hi=1e3)
    check_int("n_starts", n_starts, lo=1, hi=100, allow_none=True)
    check_int("toy_steps", toy_steps, lo=100, hi=100000, allow_none=True)
    check_int("cnn_epochs", cnn_epochs, lo=2, hi=1000, allow_none=True)
    check_int("gd_steps", gd_steps, lo=2, hi=100000, allow_none=True)
    check_int("cnn_seeds", cnn_seeds, lo=1, hi=10, allow_none=True)
    check_int("n_train", n_train, lo=16, hi=50000, allow_none=True)
    gd_lr = check_float("gd_lr", gd_lr, lo=0.0, lo_open=True, hi=10.0)
    sgd_lr = check_float("sgd_lr", sgd_lr, lo=0.0, lo_open=True, hi=10.0)
    adam_lr = check_float("adam_lr", adam_lr, lo=0.0, lo_open=True, hi=1.0)
    check_int("batch", batch, lo=1, hi=50000)
    check_int("power_iters", power_iters, lo=0, hi=1000, allow_none=True)
    check_int("mlp_samples", mlp_samples, lo=10, hi=1797, allow_none=True)
    check_int("mlp_width", mlp_width, lo=1, hi=64)
    mlp_lr = check_float("mlp_lr", mlp_lr, lo=0.0, lo_open=True, hi=10.0)
    mlp_wd = check_float("mlp_wd", mlp_wd, lo=0.0, hi=10.0)
    check_int("mlp_steps", mlp_steps, lo=20, hi=100000, allow_none=True)
    data_path = check_path("data_path", data_path)
    if data_path is not None:
        from .data import check_cifar10

        check_cifar10(data_path)  # fail now, before any work, if it is not CIFAR-10's python version
        data_path = str(data_path)
    return make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=verbose,
                       data_path=data_path, mu=mu, n_starts=n_starts, toy_steps=toy_steps, cnn_epochs=cnn_epochs,
                       gd_steps=gd_steps, cnn_seeds=cnn_seeds, n_train=n_train, gd_lr=gd_lr, sgd_lr=sgd_lr,
                       adam_lr=adam_lr, batch=batch, power_iters=power_iters, mlp_samples=mlp_samples,
                       mlp_width=mlp_width, mlp_lr=mlp_lr, mlp_wd=mlp_wd, mlp_steps=mlp_steps)


def images(cfg):
    """Figure 4's images: CIFAR-10 from ``data_path`` when given, else scikit-learn's digits (``n_train`` of them)."""
    from .data import load_digits_images, read_cifar10

    rng = cfg.rng("fig4-data")
    if cfg.data_path is not None:
        return read_cifar10(cfg.data_path, n=cfg.n_train, rng=rng)
    return load_digits_images(cfg.n_train, rng)


from . import dynamics, experiments, logreg, plots, toys  # noqa: E402

__all__ = ["SLUG", "SIZES", "LOADERS", "config", "images", "dynamics", "experiments", "logreg", "plots", "toys"]
