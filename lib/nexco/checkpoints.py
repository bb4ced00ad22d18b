"""The quick-mode denoisers, shipped as a small checkpoint (``data/nexco/quick_denoisers.npz``).

Training the two quick denoisers (the NEXCO denoiser and its time-conditioned twin, 400 steps each) takes about
40 s on a 2-core machine, more than quick mode's whole budget, and it is not itself the experiment (every claim is
about how the trained denoiser is *decoded*, except C5, which compares the two trained models). So the quick
notebook loads them from this file; ``pretrained=False`` (and full mode) trains them at run time with the same
code. The file is made by::

    python -m lib.nexco.checkpoints          # about 40 s; rewrites the file and its provenance entry

which runs exactly what ``lib.nexco.train_models(lib.nexco.config(mode="quick", seed=0, pretrained=False), ...)``
runs. The file holds, per model, its float32 parameters (``<model>/<name>``), its training losses
(``<model>/_losses``), its constructor arguments (``<model>/_config``) and a sha256 of its parameters after the
first ``PREFIX_STEPS`` steps (``<model>/_prefix``, which a fast unit test re-derives), plus the training recipe as
JSON (``_recipe``): a recipe that differs from the run's (sizes, steps, learning rate, masking, models) refuses to
load. The denoisers are those of notebook seed 0 whatever the run's seed: in quick mode the seed then draws the test
graphs (a seeded half of the 256 shipped), not the training; full mode and ``pretrained=False`` train per seed. The file is byte-for-byte reproducible (training times go to ``provenance.json`` only).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import platform
from pathlib import Path

import numpy as np

from lib.common import data_dir

SLUG = "nexco"
NAME = "quick_denoisers"
SEED = 0  # the notebook seed the shipped denoisers were trained with
PREFIX_STEPS = 10  # parameters are also digested after this many steps (a unit test re-trains only these)
RECIPE_KEYS = ("n_train", "train_steps", "hidden", "layers", "batch_size", "lr", "masking", "models")


def path(folder: Path | None = None) -> Path:
    return (Path(folder) if folder is not None else data_dir(SLUG)) / f"{NAME}.npz"


def recipe(cfg) -> dict:
    """The training recipe of a run configuration (what the checkpoint must match), with each model's seed."""
    from .experiments import model_seed

    r = {k: (list(getattr(cfg, k)) if isinstance(getattr(cfg, k), tuple) else getattr(cfg, k)) for k in RECIPE_KEYS}
    r["seeds"] = {name: model_seed(cfg, name) for name in cfg.models}
    return r


def recipe_seeds(models=("nexco", "twin")) -> dict:
    """The model seeds of the shipped recipe: those a run with notebook seed ``SEED`` draws
    (:func:`lib.nexco.experiments.model_seed`)."""
    from lib.common import rng_for

    return {name: int(rng_for(SEED, f"train-{name}").integers(2**31)) for name in models}


def param_digest(model) -> str:
    """sha256 over a model's parameters (float32 bytes, in ``state_dict`` order)."""
    h = hashlib.sha256()
    for k, v in model.state_dict().items():
        h.update(k.encode())
        h.update(v.detach().numpy().astype(np.float32).tobytes())
    return h.hexdigest()


def save(models: dict, rec: dict, file: Path, prefix: dict) -> dict:
    """Write the checkpoint of the trained ``models`` (name -> TrainResult); returns its provenance entry."""
    from .instances import save_npz

    arrays = {"_recipe": np.array(json.dumps(rec, sort_keys=True))}
    for name, tr in models.items():
        for k, v in tr.model.state_dict().items():
            arrays[f"{name}/{k}"] = v.detach().numpy().astype(np.float32)
        arrays[f"{name}/_losses"] = np.asarray(tr.losses, dtype=np.float32)
        arrays[f"{name}/_config"] = np.array(json.dumps(tr.model.config, sort_keys=True))
        arrays[f"{name}/_prefix"] = np.array(prefix[name])
    save_npz(file, **arrays)
    import torch

    return {"file": file.name, "kind": "checkpoint", "models": list(models), "recipe": rec,
            "n_params": {k: tr.model.n_params() for k, tr in models.items()},
            "param_sha256": {k: param_digest(tr.model) for k, tr in models.items()},
            "train_seconds": {k: round(tr.seconds, 1) for k, tr in models.items()},
            "file_sha256": hashlib.sha256(file.read_bytes()).hexdigest(), "torch": torch.__version__,
            "python": platform.python_version(), "command": "python -m lib.nexco.checkpoints"}


def load(cfg, file: Path | None = None) -> dict:
    """The shipped denoisers as ``{name: TrainResult}`` (``loaded=True``), after checking the recipe."""
    import torch

    from .diffusion import TrainResult
    from .gnn import EdgeGatedGNN
    from .instances import load_npz

    file = path() if file is None else Path(file)
    if not file.exists():
        raise FileNotFoundError(f"{file} is missing; run `python -m lib.nexco.checkpoints` (about 40 s), "
                                f"or set pretrained = False to train the denoisers here")
    a = load_npz(file)
    prov = json.loads((file.parent / "provenance.json").read_text()).get(NAME, {}) \
        if (file.parent / "provenance.json").exists() else {}
    shipped, want = json.loads(str(a["_recipe"])), recipe(cfg)
    # the shipped denoisers were trained with notebook seed SEED: a run with another seed uses them as they are
    # (its seed then draws the test subset, not the denoisers), so the model seeds are not compared
    shipped_seeds, _ = shipped.pop("seeds", None), want.pop("seeds", None)
    if shipped_seeds != recipe_seeds():
        raise ValueError(f"{file.name}: its model seeds {shipped_seeds} are not those of notebook seed {SEED} "
                         f"({recipe_seeds()}); run `python -m lib.nexco.checkpoints`")
    if shipped != want:
        diff = sorted(k for k in set(shipped) | set(want) if shipped.get(k) != want.get(k))
        raise ValueError(f"{file.name} was trained with another recipe (differs in {diff}); run "
                         f"`python -m lib.nexco.checkpoints` or set pretrained = False")
    out = {}
    for name in cfg.models:
        conf = json.loads(str(a[f"{name}/_config"]))
        model = EdgeGatedGNN(**conf)
        state = {k.split("/", 1)[1]: torch.from_numpy(v) for k, v in a.items()
                 if k.startswith(f"{name}/") and not k.split("/", 1)[1].startswith("_")}
        model.load_state_dict(state)
        model.eval()
        out[name] = TrainResult(model, [float(x) for x in a[f"{name}/_losses"]], float(prov.get("train_seconds", {}).get(name, float("nan"))),
                                int(cfg.train_steps), loaded=True)
    return out


def prefix_digest(cfg, train, name: str) -> str:
    """Digest of model ``name``'s parameters after its first ``PREFIX_STEPS`` training steps (same recipe)."""
    from .experiments import train_one

    return param_digest(train_one(cfg, train, name, steps_run=PREFIX_STEPS).model)


def make(folder: Path | None = None) -> dict:
    """Train the quick denoisers exactly as a quick run with ``pretrained=False, seed=0`` does, and ship them."""
    from . import config
    from .experiments import load_data, train_models

    cfg = config(mode="quick", seed=SEED, pretrained=False, verbose=False)
    data = load_data(cfg)
    models = train_models(cfg, data)
    prefix = {name: prefix_digest(cfg, data.train, name) for name in cfg.models}
    file = path(folder)
    prov = save(models, recipe(cfg), file, prefix)
    prov_path = file.parent / "provenance.json"
    provs = json.loads(prov_path.read_text()) if prov_path.exists() else {}
    provs[NAME] = prov
    prov_path.write_text(json.dumps(dict(sorted(provs.items())), indent=1) + "\n", encoding="utf-8")
    return prov


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folder", default=None, help="write there instead of data/nexco/")
    args = ap.parse_args(argv)
    prov = make(args.folder)
    print(f"{prov['file']}: {prov['n_params']} parameters, trained in {prov['train_seconds']} s, "
          f"sha256 {prov['file_sha256']}")


if __name__ == "__main__":
    main()
