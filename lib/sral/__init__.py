"""SRAL: Set Representation Auxiliary Learning with Adversarial Encoding Perturbation (Chen, Zhang, Zou, He, Li, Yu,
King, Liu; ICLR 2026), reconstructed in torch: no code or loss is public, so "SRAL as reconstructed" follows the
abstract (2-sliced-Wasserstein quantile pooling, an auxiliary InfoNCE under a worst-case perturbation of the element
embeddings, min-max by FGSM/PGD).

Modules: :mod:`.data` (task R's Gaussian-mixture sets, digits point clouds, the OFF/ModelNet40 reader, task E's topic
vocabulary, padding), :mod:`.ot` (exact and sliced W2 with POT), :mod:`.model` (phi, DeepSets / PSWE /
Set-Transformer-lite pooling, the adversarial auxiliary, training), :mod:`.metrics` (NDCG@k, Spearman, MAP@k),
:mod:`.experiments` (one function per figure and claim), :mod:`.plots`, :mod:`.make_data` (the committed W2 file
and the OFF fixture).
"""
from __future__ import annotations

from lib.common import check_choice, check_float, check_int, check_path, make_config
from lib.common.userfiles import UserFileLoader

from .data import MODELNET_EXPECTED

SLUG = "sral"

# The user-file parameter (lib.common.userfiles contract): ModelNet40's folder of OFF meshes.
LOADERS = {
    "data_path": UserFileLoader(
        "data_path", "lib.sral.data:check_modelnet", fixture="data/sral/modelnet_tiny", kind="folder",
        target="cube/train/cube_train_0000.off", expected=MODELNET_EXPECTED),
}

SIZES = {
    "quick": {"tasks": ["R"], "encoders": ["DeepSets", "PSWE", "SRAL (PSWE)"], "epochs": 5, "h": 32, "n_slices": 16,
              "n_quantiles": 8, "pgd_steps": 1, "n_train_dists": 500, "seeds": 1, "lr_grid": [3e-3],
              "eps_grid": [], "beta_grid": [], "slices_grid": [], "cloud_points": 48, "cloud_epochs": 5,
              "cloud_max_per_class": 40, "e_epochs": 5},
    "full": {"tasks": ["R", "C", "E"],
             "encoders": ["DeepSets", "SetTransformer-lite", "PSWE", "PSWE + random δ", "PSWE + input δ",
                          "SRAL (PSWE)", "SRAL (DeepSets)"],
             "epochs": 20, "h": 32, "n_slices": 16, "n_quantiles": 8, "pgd_steps": 1, "n_train_dists": 500,
             "seeds": 3, "lr_grid": [1e-3, 3e-3, 1e-2], "eps_grid": [0.0, 0.02, 0.05, 0.1, 0.2],
             "beta_grid": [0.0, 0.1, 0.5, 1.0], "slices_grid": [4, 16, 64], "cloud_points": 48, "cloud_epochs": 20,
             "cloud_max_per_class": 200, "e_epochs": 20},
}


def config(mode="quick", seed=0, out_dir=None, device="auto", data_path=None, eps=0.1, beta=0.5, tau_c=0.1,
           epochs=None, h=None, n_slices=None, n_quantiles=None, pgd_steps=None, seeds=None, verbose=True):
    """Validate the notebook's parameters and build the run configuration.

    eps : perturbation radius relative to the batch's mean element-embedding norm; beta : weight of L_aux;
    tau_c : InfoNCE temperature of L_aux; epochs, h, n_slices (L), n_quantiles (M), pgd_steps (K; 1 = FGSM),
    seeds (claim replicas) take the mode's value when None. data_path : a ModelNet40-style folder
    (<class>/{train,test}/*.off) for task C (then task C runs in quick mode too); None: digits point clouds.
    """
    eps = check_float("eps", eps, lo=0.0, hi=1.0)
    beta = check_float("beta", beta, lo=0.0, hi=10.0)
    tau_c = check_float("tau_c", tau_c, lo=1e-3, hi=10.0)
    check_int("epochs", epochs, lo=1, hi=500, allow_none=True)
    check_int("h", h, lo=4, hi=512, allow_none=True)
    if h is not None and h % 4:
        raise ValueError(f"parameter 'h' got {h}; allowed: a multiple of 4 (Set-Transformer-lite has 4 heads)")
    check_int("n_slices", n_slices, lo=1, hi=512, allow_none=True)
    check_int("n_quantiles", n_quantiles, lo=1, hi=64, allow_none=True)
    check_int("pgd_steps", pgd_steps, lo=1, hi=20, allow_none=True)
    check_int("seeds", seeds, lo=1, hi=10, allow_none=True)
    data_path = check_path("data_path", data_path)
    if data_path is not None:
        from lib.common.userfiles import check_user_file

        check_user_file(LOADERS["data_path"], data_path)  # a malformed folder is refused before any work
        data_path = str(data_path)
    return make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=verbose,
                       data_path=data_path, eps=eps, beta=beta, tau_c=tau_c, epochs=epochs, h=h, n_slices=n_slices,
                       n_quantiles=n_quantiles, pgd_steps=pgd_steps, seeds=seeds)


__all__ = ["SLUG", "SIZES", "LOADERS", "config"]
