"""Train the quick-mode depth-recurrent LM and write ``data/latent_thinking/recurrent_lm.npz`` (float16, < 1 MB).

    python -m lib.latent_thinking.make_checkpoint        # about 9 min on one CPU core (527 s measured)

It runs exactly :func:`train_recipe` with :data:`RECIPE` (seed 0); full mode re-runs the same function with the
run's seed. The recipe, the loss curve and the timing go to ``data/latent_thinking/provenance.json``; the
checkpoint holds the recipe too and :func:`lib.latent_thinking.model.load_checkpoint` refuses a mismatch.
"""
from __future__ import annotations

import argparse
import platform
import time

import numpy as np
import torch

from lib.common import data_dir, update_provenance

from .model import build, load_checkpoint, save_checkpoint, train
from .tasks import CharTokenizer, training_texts

SLUG = "latent_thinking"
NAME = "recurrent_lm.npz"
RECIPE = {
    "arch": {"vocab_size": 2048, "n_embd": 64, "n_head": 4, "n_positions": 64, "n_prelude": 1, "n_core": 1,
             "n_coda": 1, "sigma": 1.0, "max_rec": 8, "bptt": 4},
    "tasks": ["arith", "pointer"], "n_texts": 200000, "steps": 3000, "lr": 3e-3, "batch_size": 32,
    "seq_len": 48, "warmup_steps": 100, "seed": 0,
}


def checkpoint_path():
    return data_dir(SLUG) / NAME


def train_recipe(recipe: dict, seed: int = None, verbose: bool = False, snapshot_dir=None):
    """Build and train the model of ``recipe`` (``seed`` overrides the recipe's). Returns (model, log, tokenizer)."""
    seed = recipe["seed"] if seed is None else int(seed)
    tok = CharTokenizer()
    texts = training_texts(recipe["n_texts"], np.random.default_rng(seed + 12345), tasks=tuple(recipe["tasks"]))
    model = build(recipe["arch"], seed=seed)
    t0 = time.time()

    def cb(step, m):
        if verbose:
            print(f"step {step} ({time.time() - t0:.0f} s)", flush=True)
        if snapshot_dir is not None:
            torch.save(m.state_dict(), f"{snapshot_dir}/snapshot_{step}.pt")

    log = train(model, texts, tok, steps=recipe["steps"], lr=recipe["lr"], batch_size=recipe["batch_size"],
                seq_len=recipe["seq_len"], seed=seed, warmup_steps=recipe["warmup_steps"], callback=cb,
                callback_every=250 if (verbose or snapshot_dir) else 0)
    if verbose:
        print("loss every 250 steps:", [round(float(np.mean(log.losses[i:i + 50])), 3)
                                        for i in range(0, len(log.losses), 250)], flush=True)
    return model, log, tok


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=RECIPE["steps"])
    ap.add_argument("--out", default=None, help="write here instead of data/latent_thinking/")
    ap.add_argument("--snapshots", default=None, help="a folder for a state_dict every 250 steps (optional)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    recipe = dict(RECIPE, steps=args.steps)
    t0 = time.time()
    model, log, _ = train_recipe(recipe, verbose=True, snapshot_dir=args.snapshots)
    secs = time.time() - t0
    from pathlib import Path

    file = Path(args.out) if args.out else checkpoint_path()
    file.parent.mkdir(parents=True, exist_ok=True)
    entry = save_checkpoint(model, file, recipe)
    load_checkpoint(file, recipe)
    prov = {NAME: dict(entry, recipe=recipe, command="python -m lib.latent_thinking.make_checkpoint",
                       torch=torch.__version__, python=platform.python_version(), train_seconds=round(secs, 1),
                       final_loss=round(float(np.mean(log.losses[-100:])), 4),
                       loss_every_250=[round(float(np.mean(log.losses[i:i + 50])), 4)
                                       for i in range(0, len(log.losses), 250)])}
    update_provenance(file.parent, prov)
    print(f"wrote {file} ({entry['bytes']} bytes, sha256 {entry['sha256']}) in {secs:.0f} s")


if __name__ == "__main__":
    main()
