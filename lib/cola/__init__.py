"""COLA: joint-distribution-informed Shapley values for sparse counterfactual explanations (You, Bian, Cao;
ICLR 2026), reimplemented on scikit-learn models, POT and numpy.

Modules: :mod:`.data` (data sets, German Credit reader), :mod:`.models` (six classifier families),
:mod:`.generators` (Wachter, NUN, Growing Spheres, DiCE-random), :mod:`.matching` (OT and other couplings,
q), :mod:`.pshap` (exact and sampled p-SHAP, decoupled SHAP), :mod:`.refine` (action orders, C*, oracle,
proximity), :mod:`.experiments`, :mod:`.plots`, :mod:`.make_data` (the German Credit fixture).
"""
from __future__ import annotations


from lib.common import MODES, check_choice, check_float, check_int, check_path, make_config
from lib.common.userfiles import UserFileLoader

from .data import DATASETS, ENCODINGS, GERMAN_EXPECTED, USER_DATASETS
from .generators import GENERATORS
from .models import MODELS

SLUG = "cola"

# The user-file parameter (lib.common.userfiles contract): UCI's german.data.
LOADERS = {
    "data_path": UserFileLoader("data_path", "lib.cola.data:read_german", fixture="data/cola/german_fixture.data",
                                expected=GERMAN_EXPECTED),
}

SIZES = {
    "quick": {
        "n_factuals": 30,
        "datasets": ["breast_cancer10", "credit_like", "credit_like_onehot"],
        # one-hot sets (40-61 columns, p-SHAP by sampling) run with the cheap-to-call models only in quick mode:
        # the forest's 100 trees on the ~160k sampled coalition states of a cell cost about 7 s
        "dataset_models": {"credit_like_onehot": ["lr", "mlp"], "german_onehot": ["lr", "mlp"]},
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
        "datasets": ["breast_cancer10", "fair", "credit_like", "credit_like_onehot"],
        "dataset_models": {},
        "models": list(MODELS),
        "generators": list(GENERATORS),
        "n_oracle": 20,
        "n_perm": 512,
        "n_perm_decoupled": 256,
        "n_background": 200,
        "ablation_datasets": ["breast_cancer10", "fair", "credit_like"],  # the coupling ablation: the P <= 12 sets
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


def config(mode="quick", seed=0, out_dir=None, device="auto", data_path=None, encoding="onehot", n_factuals=None,
           datasets=None, models=None, generators=None, ot_reg=0.0, verbose=True):
    """Validate the notebook's parameters and build the run configuration.

    ``data_path``: a German Credit file (UCI's ``german.data``), relative to the working folder or the project
    root; it replaces the credit-like synthetic data sets (both encodings) by one German Credit set, encoded by
    ``encoding``: ``"onehot"`` (one 0/1 column per categorical level, about 61 columns, as in the paper) or
    ``"ordinal"`` (the 20 attributes with integer level codes). ``datasets``/``models``/``generators``: lists
    (None: the mode's; an explicit ``models`` list runs on every data set). ``ot_reg``: 0 for exact EMD, > 0 for
    entropic OT (Sinkhorn) on the max-normalised cost.
    """
    check_choice("mode", mode, MODES)
    check_choice("encoding", encoding, ENCODINGS)
    check_int("n_factuals", n_factuals, lo=5, hi=2000, allow_none=True)
    datasets = _check_list("datasets", datasets, [d for d in DATASETS if d not in USER_DATASETS])
    explicit_models = models is not None
    models = _check_list("models", models, MODELS)
    generators = _check_list("generators", generators, GENERATORS)
    ot_reg = check_float("ot_reg", ot_reg, lo=0.0)
    data_path = check_path("data_path", data_path)
    if data_path is not None:
        from lib.common.userfiles import check_user_file

        if data_path.is_dir():
            raise ValueError(f"parameter 'data_path' ({str(data_path)!r}): is a folder, not a file; expected "
                             f"{GERMAN_EXPECTED}")
        check_user_file(LOADERS["data_path"], data_path)  # a malformed file is refused before any work
    base = SIZES.get(mode, SIZES["quick"])
    ds = list(datasets if datasets is not None else base["datasets"])
    german = "german_onehot" if encoding == "onehot" else "german"
    if data_path is not None:
        ds = list(dict.fromkeys(german if d.startswith("credit_like") else d for d in ds))
        ds = ds if german in ds else ds + [german]
    ablation = [d for d in dict.fromkeys(german if d.startswith("credit_like") and data_path is not None else d
                                         for d in base["ablation_datasets"]) if d in ds]
    dataset_models = {} if explicit_models else dict(base["dataset_models"])
    return make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=verbose,
                       n_factuals=n_factuals, datasets=ds, models=models, generators=generators,
                       ablation_datasets=ablation, dataset_models=dataset_models, ot_reg=ot_reg,
                       data_path=data_path, encoding=encoding)


__all__ = ["config", "SIZES", "LOADERS", "DATASETS", "MODELS", "GENERATORS"]
