"""Graph Mixing Additive Networks (GMAN; Zerio, Bechler-Speicher et al., ICLR 2026), reimplemented in torch on
synthetic irregular biomarkers, with a reader for PhysioNet 2012.

Modules: :mod:`.data` (the biomarker generator, the synthetic cascades, summary features, the carried-forward grid,
the PhysioNet reader), :mod:`.model` (ExtGNAN, DeepSet mixing, GMAN, the block-diagonal batch), :mod:`.train` (loss,
training, AUROC / AUPRC / ECE), :mod:`.baselines` (summary features into LR and HGB; GRU-D-lite; a plain-torch GIN),
:mod:`.explain` (node, graph and subset contributions, shape and distance functions), :mod:`.experiments`,
:mod:`.plots`, :mod:`.make_data` (the fixture).
"""
from __future__ import annotations

import os

from lib.common import check_float, check_int, check_path, make_config
from lib.common.userfiles import UserFileLoader

from .data import PHYSIONET_EXPECTED

SLUG = "gman"

LOADERS = {
    "data_path": UserFileLoader("data_path", "lib.gman.data:check_physionet", fixture="data/gman/physionet_tiny",
                                kind="folder", target="set-a/132540.txt", expected=PHYSIONET_EXPECTED),
}

SIZES = {
    # grud: the GRU-D-lite baseline; n_cascades: the cascade task of Figure 6 (0: skipped); workers: processes for
    # the independent trainings (capped at the machine's cores; the results do not depend on it)
    "quick": {"n_patients": 600, "n_markers": 6, "hidden": 16, "epochs": 15, "batch": 64, "n_seeds": 1,
              "grud": False, "n_cascades": 0, "workers": 1},
    "full": {"n_patients": 4000, "n_markers": 8, "hidden": 32, "epochs": 60, "batch": 64, "n_seeds": 5,
             "grud": True, "n_cascades": 2000, "workers": 2},
}


def config(mode="quick", seed=0, out_dir=None, device="auto", data_path=None, n_patients=None, n_markers=None,
           hidden=None, epochs=None, n_seeds=None, tau=60.0, lr=1e-2, workers=None, verbose=True):
    """Validate the notebook's parameters and build the run configuration.

    n_patients, n_markers : size of the synthetic cohort (markers A, B, C, ...; A, B, C carry the signal).
    hidden, epochs, n_seeds : GMAN width, training epochs and replicates. tau : critical window (days).
    data_path : None (the generator) or a PhysioNet 2012 folder (Outcomes-a.txt + set-a/).
    workers : processes for the independent trainings (None: 1 quick, 2 full; at most the machine's cores); the
    numbers do not depend on it.
    """
    check_int("n_patients", n_patients, lo=60, hi=100000, allow_none=True)
    check_int("n_markers", n_markers, lo=3, hi=26, allow_none=True)
    check_int("hidden", hidden, lo=2, hi=256, allow_none=True)
    check_int("epochs", epochs, lo=1, hi=1000, allow_none=True)
    check_int("n_seeds", n_seeds, lo=1, hi=20, allow_none=True)
    check_int("workers", workers, lo=1, hi=64, allow_none=True)
    tau = check_float("tau", tau, lo=5.0, hi=300.0)
    lr = check_float("lr", lr, lo=1e-5, hi=1.0)
    data_path = check_path("data_path", data_path)
    if data_path is not None:
        from lib.common.userfiles import check_user_file

        check_user_file(LOADERS["data_path"], data_path)
        data_path = str(data_path)
    workers = min(int(workers if workers is not None else SIZES.get(mode, SIZES["quick"])["workers"]),
                  os.cpu_count() or 1)
    return make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=verbose,
                       data_path=data_path, n_patients=n_patients, n_markers=n_markers, hidden=hidden, epochs=epochs,
                       n_seeds=n_seeds, tau=tau, lr=lr, workers=workers, window=365.0, time_unit=30.0)


__all__ = ["SLUG", "SIZES", "LOADERS", "config"]
