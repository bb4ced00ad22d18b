"""Train the quick-mode tiny CLIP and write ``data/maskinversion/tiny_clip.npz`` (float16 weights, < 2 MB).

    python -m lib.maskinversion.train_checkpoint          # about 4-5 min on 2 CPU cores

It runs exactly ``train_clip(make_tiny_clip("base", seed=SEED), steps=STEPS, seed=SEED, n_train=N_TRAIN)``, the
recipe that full mode re-runs (with its own seed) when it retrains. The recipe, the training losses and timing go
to ``data/maskinversion/provenance.json``; the checkpoint itself holds the recipe too, and
``lib.maskinversion.config`` refuses a checkpoint whose recipe differs from :data:`RECIPE`.
"""
from __future__ import annotations

import argparse
import platform

import numpy as np
import torch

from lib.common import data_dir, update_provenance

from .model import load_checkpoint, make_tiny_clip, save_checkpoint, train_clip

SLUG = "maskinversion"
NAME = "tiny_clip.npz"
SEED = 0
RECIPE = {"archs": ["base"], "image_size": 32, "patch_size": 4, "steps": 1200, "n_train": 20000, "batch": 128,
          "lr": 1e-3, "seed": SEED}


def checkpoint_path():
    return data_dir(SLUG) / NAME


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=RECIPE["steps"], help="training steps (default: the recipe's)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)  # one thread: faster than two on a shared 2-core machine
    recipe = dict(RECIPE, steps=args.steps)
    models, logs = {}, {}
    for arch in recipe["archs"]:
        m = make_tiny_clip(arch, image_size=recipe["image_size"], patch_size=recipe["patch_size"], seed=SEED)
        logs[arch] = train_clip(m, recipe["steps"], SEED, n_train=recipe["n_train"], batch=recipe["batch"],
                                lr=recipe["lr"], verbose=True)
        models[arch] = m
    file = checkpoint_path()
    entry = save_checkpoint(models, file, recipe)
    load_checkpoint(file, recipe["archs"][0])  # it loads
    prov = {NAME: dict(entry, recipe=recipe, command="python -m lib.maskinversion.train_checkpoint",
                       torch=torch.__version__, python=platform.python_version(),
                       train_seconds={a: round(v["seconds"], 1) for a, v in logs.items()},
                       final_loss={a: round(float(np.mean(v["losses"][-50:])), 4) for a, v in logs.items()},
                       loss_every_100={a: [round(x, 4) for x in v["losses"][::100]] for a, v in logs.items()})}
    update_provenance(file.parent, prov)
    print(f"wrote {file} ({entry['bytes']} bytes, sha256 {entry['sha256']})")


if __name__ == "__main__":
    main()
