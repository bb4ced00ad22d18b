"""Make ``data/deleuzian_concepts/tiny_gpt2.pt``: the tiny GPT-2 that quick mode explains.

    python -m lib.deleuzian_concepts.make_checkpoint            # about 2 minutes on one CPU core
    python -m lib.deleuzian_concepts.make_checkpoint --steps 2 --n-sentences 200 --doc-files 5 --out /tmp/x.pt   # a fast check

Architecture and training come from :data:`lib.deleuzian_concepts.encoders.CKPT_ARCH` / ``CKPT_TRAIN``; the
weights are stored in float16 without the tied LM head (about 1.7 MB). Same arguments, same file contents.
"""
from __future__ import annotations

import argparse
import hashlib

from lib.common import data_dir

from .encoders import CHECKPOINT, CKPT_ARCH, CKPT_TRAIN, save_checkpoint, train_gpt2


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=CKPT_TRAIN["steps"])
    ap.add_argument("--n-sentences", type=int, default=CKPT_TRAIN["n_sentences"], help="templated training sentences")
    ap.add_argument("--doc-files", type=int, default=CKPT_TRAIN["doc_files"], help="stdlib files for docstrings")
    ap.add_argument("--out", default=str(data_dir("deleuzian_concepts") / CHECKPOINT))
    args = ap.parse_args(argv)
    train = dict(CKPT_TRAIN, steps=args.steps, n_sentences=args.n_sentences, doc_files=args.doc_files)
    model, _, log = train_gpt2(CKPT_ARCH, train, progress_every=250)
    save_checkpoint(model, args.out, {"arch": CKPT_ARCH, "train": train,
                                      "final_loss": float(sum(log.losses[-20:]) / max(1, len(log.losses[-20:])))})
    digest = hashlib.sha256(open(args.out, "rb").read()).hexdigest()
    print(f"wrote {args.out} (final training loss {sum(log.losses[-20:]) / max(1, len(log.losses[-20:])):.3f}); "
          f"sha256 {digest}")


if __name__ == "__main__":
    main()
