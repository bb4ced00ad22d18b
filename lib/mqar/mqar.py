"""MQAR as reconstructed from the paper's notes: a quantized-regularization module QR before every attention layer of
a frozen LM, trained in two stages.

Per token x in R^d (the LayerNorm-ed attention input):

    z = e1(x) in R^{d/4}                         encoder (2-layer MLP, GELU)
    r = Q(z): r_j = argmin_{c in C_j} |z_j - c|   per-dimension scalar codebook C_j of K levels (straight-through)
    x' = d1(z),  x'' = d2(r) = QR(x)             decoders; x'' is what Q, K, V are computed from
    a_hat = sigmoid(D(r)) in [0, 1]^M            multi-hot discriminator over the protected attributes

    L_rec = ||x - x'||^2 + ||x - x''||^2,   L_q = ||sg(z) - r||^2,   L_commit = ||z - sg(r)||^2

Stage 1 trains e1, C, d1, d2 on L_rec + L_q + L_commit and D on BCE(D(sg(r)), a) over lexicon-cued tokens.
Stage 2 freezes D, draws random multi-hot labels a^r and trains e1, C, d1, d2 on
L_rec + L_q + L_commit + beta BCE(D(r), a^r): D's predictions are pushed to chance, so r carries no attribute
information it can read. Ablations: ``decoders=False`` (no reconstruction term: d1 and d2 are never trained to
reconstruct), ``discriminator=False`` (stage 2 with beta = 0), ``attrs=(0,)`` (gender-only discriminator: trained
in stage 1 beside the multi-hot one on the same detached codes, so the variants share stage 1).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from lib.common.optim import Adam


class QRModule(nn.Module):
    def __init__(self, d, latent, levels, n_attr, hidden_disc=32, n_aux=0):
        super().__init__()
        self.e1 = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, latent))
        self.codebook = nn.Parameter(torch.linspace(-1, 1, levels).repeat(latent, 1))  # [latent, K]
        self.d1 = nn.Sequential(nn.Linear(latent, d), nn.GELU(), nn.Linear(d, d))
        self.d2 = nn.Sequential(nn.Linear(latent, d), nn.GELU(), nn.Linear(d, d))
        self.disc = nn.Sequential(nn.Linear(latent, hidden_disc), nn.GELU(), nn.Linear(hidden_disc, n_attr))
        # a second discriminator over a subset of the attributes (the single-attribute ablation's), trained in
        # stage 1 beside ``disc`` on the same detached codes; it never touches the encoder or decoders
        self.disc_aux = (nn.Sequential(nn.Linear(latent, hidden_disc), nn.GELU(), nn.Linear(hidden_disc, n_aux))
                         if n_aux else None)

    def quantize(self, z):
        """Nearest codebook value per coordinate: (r, indices)."""
        idx = (z[..., None] - self.codebook).abs().argmin(-1)  # [..., latent]
        r = torch.gather(self.codebook.expand(*z.shape[:-1], *self.codebook.shape), -1, idx[..., None])[..., 0]
        return r, idx

    def forward(self, x):
        z = self.e1(x)
        r, idx = self.quantize(z)
        r_st = z + (r - z).detach()  # straight-through estimator
        out = self.d2(r_st)
        return out, dict(x=x, z=z, r=r, r_st=r_st, idx=idx, out=out)


class Identity(nn.Module):
    """A module with QR's interface that returns its input (the hook's null edit, for tests)."""

    def forward(self, x):
        return x, {}


@dataclass
class MQARModel:
    modules: list
    log: dict = field(default_factory=dict)
    label: str = "MQAR"

    def pre_attn(self, i, x):
        return self.modules[i](x)[0]

    def n_params(self, inference=True):
        """Parameters of the modules (inference: e1, codebook and d2, the path a forward pass uses; training: and
        d1 and the discriminator D)."""
        n = 0
        for m in self.modules:
            parts = [m.e1, m.d2] if inference else [m.e1, m.d1, m.d2, m.disc]
            n += sum(p.numel() for q in parts for p in q.parameters()) + m.codebook.numel()
        return int(n)


def _masked_mse(a, b, mask):
    return (((a - b) ** 2).mean(-1) * mask).sum() / mask.sum().clamp_min(1)


def train_mqar(lm, ids, lens, labels, *, steps1, steps2, beta=1.0, lr=1e-3, batch=32, latent=None, levels=10,
               attrs=(0, 1), decoders=True, discriminator=True, seed=0, stage1=None, aux_attrs=None, label="MQAR"):
    """Train one QR module per attention layer of the frozen ``lm`` (a :class:`lib.mqar.model.TinyGPT2` or
    ``HubLM``) on the token ids ``[N, T]`` with attribute labels ``[N, T, M]`` (1 / 0, -1 = no cue).

    ``attrs``: the attributes the discriminator reads (multi-hot). ``aux_attrs``: stage 1 also trains a second
    discriminator over these attributes on the same detached codes (it changes nothing else). ``stage1``: an
    :class:`MQARModel` whose stage-1 state to start from (variants that differ only in stage 2 share stage 1); with
    ``attrs`` equal to that stage 1's ``aux_attrs``, stage 2 plays against the auxiliary discriminator (the
    single-attribute ablation). Returns an :class:`MQARModel` with ``log`` = per-step losses."""
    import copy

    d = lm.d
    latent = latent or d // 4
    attrs = tuple(attrs)
    g = torch.Generator().manual_seed(int(seed))
    torch.manual_seed(int(seed))  # module initialisation
    ids_t, lens_t = torch.as_tensor(ids), torch.as_tensor(lens)
    lab_all = torch.as_tensor(labels).float()
    valid = (torch.arange(ids.shape[1])[None] < lens_t[:, None]).float()
    log = {"rec": [], "disc": [], "adv": [], "disc_acc": []}

    def batch_of():
        j = torch.randint(0, len(ids_t), (batch,), generator=g)
        T = int(lens_t[j].max())  # trim the batch to its longest sentence
        return ids_t[j, :T], valid[j, :T], lab_all[j, :T]

    def run(mods, x):
        aux = []

        def hook(i, h):
            out, a = mods[i](h)
            aux.append(a)
            return out

        lm.hidden(x, pre_attn=hook, stop_after=lm.n_layer - 1)  # nothing after the last module's input is needed
        return aux

    def bce(logit, tgt, w):
        return (F.binary_cross_entropy_with_logits(logit, tgt, reduction="none") * w).sum() / w.sum().clamp_min(1)

    if stage1 is not None:
        mods = copy.deepcopy(stage1.modules)
        log = copy.deepcopy(stage1.log)
        s1_attrs, s1_aux = stage1.log.get("attrs", (0, 1)), stage1.log.get("aux_attrs")
        if attrs not in (s1_attrs, s1_aux):
            raise ValueError(f"attrs {attrs}: stage 1 trained discriminators for {s1_attrs} and {s1_aux} only")
        use_aux = attrs != s1_attrs
        for m in mods:
            m.train()
            for p in m.parameters():
                p.requires_grad_(True)
    else:
        use_aux = False
        aux_attrs = tuple(aux_attrs) if aux_attrs else None
        log.update(attrs=attrs, aux_attrs=aux_attrs)
        mods = [QRModule(d, latent, levels, len(attrs), n_aux=len(aux_attrs or ())) for _ in range(lm.n_layer)]
        opt = Adam([p for m in mods for p in m.parameters()], lr=lr, max_grad_norm=1.0)
        heads = [("disc", attrs)] + ([("disc_aux", aux_attrs)] if aux_attrs else [])
        for _ in range(int(steps1)):
            x, mask, lab_b = batch_of()
            aux = run(mods, x)
            loss, ldisc, acc = 0.0, 0.0, []
            for m, a in zip(mods, aux):
                loss = loss + _vq_losses(m, a, mask, decoders)
                for name, at in heads:
                    lab = lab_b[..., list(at)]
                    cue = (lab >= 0).any(-1) & (mask > 0)  # lexicon-cued tokens; neutral tokens are excluded
                    logit = getattr(m, name)(a["r"].detach())[cue]
                    tgt = lab[cue]
                    w = (tgt >= 0).float()
                    ldisc = ldisc + bce(logit, tgt.clamp_min(0), w)
                    if name == "disc":
                        acc.append(float((((logit > 0).float() == tgt) * w).sum() / w.sum().clamp_min(1)))
            opt.zero_grad()
            (loss + ldisc).backward()
            opt.step()
            log["rec"].append(float(loss.detach()))
            log["disc"].append(float(ldisc.detach()))
            log["disc_acc"].append(float(np.mean(acc)))
    if stage1 is not None or steps2:
        for m in mods:
            for q in (m.disc, m.disc_aux):
                for p in (q.parameters() if q is not None else ()):
                    p.requires_grad_(False)
        opt = Adam([p for m in mods for n, p in m.named_parameters() if not n.startswith("disc")], lr=lr,
                   max_grad_norm=1.0)
        b = float(beta) if discriminator else 0.0
        for _ in range(int(steps2)):
            x, mask, lab_b = batch_of()
            lab = lab_b[..., list(attrs)]
            aux = run(mods, x)
            loss, ladv = 0.0, 0.0
            for m, a in zip(mods, aux):
                loss = loss + _vq_losses(m, a, mask, decoders)
                w = ((lab >= 0) & (mask[..., None] > 0)).float()
                rand = torch.randint(0, 2, lab.shape, generator=g).float()  # random multi-hot labels a^r
                disc = m.disc_aux if use_aux else m.disc
                ladv = ladv + bce(disc(a["r_st"]), rand, w)
            opt.zero_grad()
            (loss + b * ladv).backward()
            opt.step()
            log["rec"].append(float(loss.detach()))
            log["adv"].append(float(ladv.detach()))
    for m in mods:
        m.eval()
        for p in m.parameters():
            p.requires_grad_(False)
    return MQARModel(mods, log, label)


def _vq_losses(m, a, mask, decoders):
    """L_rec (when decoders are trained) + L_q + L_commit of one layer's module, over the real tokens."""
    x, z, r = a["x"], a["z"], a["r"]
    lq = _masked_mse(r, z.detach(), mask)
    lc = _masked_mse(z, r.detach(), mask)
    if not decoders:
        return lq + lc
    xp = m.d1(z)
    xpp = a["out"]
    return _masked_mse(xp, x, mask) + _masked_mse(xpp, x, mask) + lq + lc
