"""Latent Thinking Optimization (Du, Dong & Ning, ICLR 2026): latent reward model + acceptance-rejection
selection of a depth-recurrent LM's latent thoughts.

Modules: ``tasks`` (generated tasks with exact one-digit answers, the character tokenizer on the shipped BPE),
``model`` (the Huginn-shaped depth-recurrent LM, trajectory sampling, checkpoint), ``make_checkpoint``
(regenerates ``data/latent_thinking/recurrent_lm.npz``), ``lrm`` (the GRU latent reward model, AUC, the
representation metrics), ``lto`` (Algorithm 1 and the baselines), ``general`` (the general-LLM variant, Table 2), ``gsm8k`` (the GSM8K jsonl reader and its
fixture), ``experiments`` (one function per figure), ``plots``.
"""
from __future__ import annotations

import torch  # noqa: F401  (imported before config() runs, so that lib.common's seeding also seeds torch)

from lib.common import check_bool, check_float, check_int, check_path, make_config
from lib.common.userfiles import UserFileLoader, check_user_file

from .general import GENERAL_FULL
from .gsm8k import EXPECTED as GSM8K_EXPECTED

SLUG = "latent_thinking"
HUGINN = "tomg-group-umd/huginn-0125"

LOADERS = {
    "data_path": UserFileLoader("data_path", "lib.latent_thinking.gsm8k:read_gsm8k",
                                fixture="data/latent_thinking/gsm8k_fixture.jsonl", expected=GSM8K_EXPECTED),
}

SIZES = {
    "quick": {
        "tasks": ("arith", "pointer"),
        "n_train": 120,  # training questions per task (x N trajectories train the LRM)
        "n_test": 120,  # held-out questions per task
        "n_samples": 10,  # N candidates per question
        "steps": 8,  # recurrent depth T at test time
        "lrm_steps": 150,
        "reps": 32,  # Algorithm 1 repetitions per question (its accuracy is averaged over them)
        "f2_questions": 20,
        "depths": (6, 16),
        "depth_n": 60,
        "betas": (1e-3, 3e-3, 1e-2, 3e-2, 0.05, 0.1, 0.3, 1.0, 3.0, 10.0, 100.0),
        "full_recipe": {},
        "general": None,  # the general-LLM variant (Table 2) runs in full mode only
    },
    "full": {
        "tasks": ("arith", "pointer", "count"),
        "n_train": 1000,
        "n_test": 1000,
        "n_samples": 20,
        "steps": 32,
        "lrm_steps": 1500,
        "reps": 64,
        "f2_questions": 200,
        "depths": (4, 6, 8, 16, 32),
        "depth_n": 500,
        "betas": (1e-3, 3e-3, 1e-2, 3e-2, 0.05, 0.1, 0.3, 1.0, 3.0, 10.0, 100.0),
        # retrain: longer, deeper, and on all three tasks (the shipped quick checkpoint saw arith and pointer only)
        "full_recipe": {"steps": 8000, "max_rec": 32, "tasks": ["arith", "pointer", "count"]},
        "general": GENERAL_FULL,  # Table 2: a standard GPT-2, latent thoughts = hidden states across layers
    },
}


def config(mode="quick", seed=0, out_dir=None, device="auto", pretrained=None, model_name=None, data_path=None,
           sigma=1.0, step_noise=0.0, beta=0.05, M=1, n_samples=None, steps=None, n_test=None, verbose=True):
    """Validate the notebook's parameters and build the run configuration.

    pretrained : None (quick: the shipped checkpoint ``data/latent_thinking/recurrent_lm.npz``; full: retrain
        with this seed), True or False.
    model_name : None (the tiny depth-recurrent LM) or ``"tomg-group-umd/huginn-0125"`` (online path, read from
        the local Hugging Face cache only; see the notebook).
    data_path : None (generated tasks) or a GSM8K jsonl file (read and validated; used with ``model_name``).
    sigma : std of the initial latent state s_0; step_noise : std of noise added in every core step (0: Huginn);
    beta : LTO's temperature; M : accepted trajectories per question.
    """
    check_bool("pretrained", pretrained, allow_none=True)
    if model_name is not None:
        from lib.common.tiny_lm import check_model_name

        if not isinstance(model_name, str) or not model_name.strip():
            raise ValueError(f"parameter 'model_name' got {model_name!r}; allowed: None (the tiny recurrent LM) or "
                             f"a hub id such as {HUGINN!r}")
        check_model_name(model_name)
    check_float("sigma", sigma, lo=0.0, hi=10.0)
    check_float("step_noise", step_noise, lo=0.0, hi=10.0)
    check_float("beta", beta, lo=0.0, lo_open=True, hi=1e6)
    check_int("M", M, lo=1, hi=20)
    check_int("n_samples", n_samples, lo=2, hi=64, allow_none=True)
    check_int("steps", steps, lo=2, hi=64, allow_none=True)
    check_int("n_test", n_test, lo=20, hi=20000, allow_none=True)
    data_path = check_path("data_path", data_path)
    if data_path is not None:
        check_user_file(LOADERS["data_path"], data_path)
    use_ckpt = (mode == "quick") if pretrained is None else bool(pretrained)
    cfg = make_config(SLUG, mode=mode, seed=seed, out_dir=out_dir, device=device, sizes=SIZES, verbose=verbose,
                      pretrained=use_ckpt, model_name=model_name, data_path=data_path, sigma=float(sigma),
                      step_noise=float(step_noise), beta=float(beta), M=int(M), n_samples=n_samples, steps=steps,
                      n_test=n_test)
    if cfg.n_samples is not None and M > cfg.n_samples:
        raise ValueError(f"parameter 'M' got {M}; allowed: at most n_samples={cfg.n_samples}")
    return cfg


__all__ = ["SLUG", "SIZES", "LOADERS", "HUGINN", "config"]
