"""COLA: joint-distribution-informed Shapley values for sparse counterfactual explanations (You, Bian, Cao;
ICLR 2026), reimplemented on scikit-learn models, POT and numpy.

Modules: :mod:`.data` (data sets, German Credit reader), :mod:`.models` (six classifier families),
:mod:`.generators` (Wachter, NUN, Growing Spheres, DiCE-random), :mod:`.matching` (OT and other couplings,
q), :mod:`.pshap` (exact and sampled p-SHAP, decoupled SHAP), :mod:`.refine` (action orders, C*, oracle,
proximity), :mod:`.experiments`, :mod:`.plots`, :mod:`.make_data` (the German Credit fixture).
"""
from __future__ import annotations

from pathlib import Path

from lib.common import MODES, check_choice, check_float, check_int, check_path, make_config, project_root

from .data import DATASETS
from .generators import GENERATORS
from .models import MODELS

SLUG = "cola"
SIZES = {
    "quick": {
        "n_factuals": 30,
        "datasets": ["breast_cancer10", "credit_like"],
        "models": ["lr", "rf", "mlp"],
        "generators": ["wachter", "nun"],
        "n_oracle": 20,
        "n_perm": 128,
        "n_perm_decoupled": 128,
        "n_background": 100,
        "ablation_datasets": ["breast_cancer10"],
    },
    "full": {
        "n_factuals": 100,
        "datasets": ["breast_cancer10", "fair", "credit_like"],
        "models": list(MODELS),
        "generators": list(GENERATORS),
        "n_oracle": 20,
        "n_perm": 512,
        "n_perm_decoupled": 256,
        "n_background": 200,
        "ablation_datasets": ["breast_cancer10", "fair", "credit_like"],
    },
}


def _check_list(name, value, allowed):
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not value:
        raise ValueError(f"parameter {name!r} got {value!r}; allowed: None or a non-empty list drawn from "
                         + ", ".join(repr(a) for a in allowed))
    for v in value:
        check_choice(name, v, allowed)
    if len(set(value)) != len(value):
        raise ValueError(f"parameter {name!r} got {value!r}; entries must be distinct")
    return list(value)


def config(mode="quick", seed=0, out_dir=None, device="auto", data_path=None, n_factuals=None, datasets=None,
           models=None, generators=None, ot_reg=0.0, verbose=True):
    """Validate the notebook's parameters and build the run configuration.

    ``data_path``: a German Credit file (``german.data`` format), relative to the working folder or the
    project root; it replaces the credit-like synthetic data set. ``datasets``/``models``/``generators``: lists (None: the mode's). ``ot_reg``: 0 for exact
    EMD, > 0 for entropic OT (Sinkhorn) on the max-normalised cost.
    """
    check_choice("mode", mode, MODES)
    check_int("n_factuals", n_factuals, lo=5, hi=2000, allow_none=True)
    datasets = _check_list("datasets", datasets, DATASETS)
    models = _check_list("models", models, MODELS)
    generators = _check_list("generators", generators, GENERATORS)
    ot_reg = check_float("ot_reg", ot_reg, lo=0.0)
    if isinstance(data_path, (str, Path)) and str(data_path) and not Path(data_path).expanduser().exists():
        in_root = project_root() / Path(data_path)  # a notebook runs in notebooks/: accept paths from the root too
        data_path = str(in_root) if in_root.exists() else data_path
    data_path = check_path("data_path", data_path)
    if data_path is not None and data_path.is_dir():
        raise ValueError(f"parameter 'data_path' got {str(data_path)!r}; expected a german.data file, not a folder")
    base = SIZES.get(mode, SIZES["quick"])
    ds = list(datasets if datasets is not None else base["datasets"])
    if data_path is not None:
        ds = ["german" if d == "credit_like" else d for d in ds]
        ds = ds if "german" in ds else ds + ["german"]
    elif "german" in ds:
        raise ValueError("parameter 'datasets' includes 'german' but 'data_path' is None; give the german.data file")
    ablation = [d for d in ("german" if d == "credit_like" and data_path is not None else d
                            for d in base["ablation_datasets"]) if d in ds]
    return make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=verbose,
                       n_factuals=n_factuals, datasets=ds, models=models, generators=generators,
                       ablation_datasets=ablation, ot_reg=ot_reg, data_path=data_path)


__all__ = ["config", "SIZES", "DATASETS", "MODELS", "GENERATORS"]
