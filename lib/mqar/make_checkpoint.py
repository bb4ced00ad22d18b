"""Train the quick-mode backbone and write ``data/mqar/tiny_gpt2.npz`` (float16 weights, tokenizer, recipe).

    python -m lib.mqar.make_checkpoint        # about 1-2 min on one CPU core

It runs exactly ``train_backbone(RECIPE)`` (the recipe full mode re-runs with the run's seed and sizes) and records
the recipe, the loss curve and timing in ``data/mqar/provenance.json``. ``load_checkpoint`` refuses a checkpoint
whose recipe differs from :data:`lib.mqar.model.RECIPE`.
"""
from __future__ import annotations

import argparse
import time

import torch

from lib.common import data_dir, update_provenance
from lib.common.tiny_lm import checkpoint_provenance

from .model import CKPT_NAME, RECIPE, SLUG, load_checkpoint, save_checkpoint, train_backbone


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.parse_args(argv)
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    model, tok, log, recipe = train_backbone(RECIPE, verbose=True)
    seconds = time.perf_counter() - t0
    file = data_dir(SLUG) / CKPT_NAME
    entry = save_checkpoint(model, tok, file, recipe)
    load_checkpoint(file)
    update_provenance(file.parent, {CKPT_NAME: checkpoint_provenance(
        entry, recipe, command="python -m lib.mqar.make_checkpoint", losses=log.losses, train_seconds=seconds)})
    print(f"wrote {file} ({entry['bytes']} bytes, sha256 {entry['sha256']})")


if __name__ == "__main__":
    main()
