"""Data with the paper's three-way structure: forget set D_f, adjacent retain set D_r^adj, remote retain set D_r^rem.

The model is always trained on *super-class* labels. D_f is one sub-class of one super-class, D_r^adj the other
sub-classes of that super-class (same label, shared features: the entanglement), D_r^rem everything else.

- :func:`digits_superclass`: scikit-learn's 8x8 digits, with the ten digits paired into five super-classes of
  confusable digits (the pairing maximises the confusions of a digit classifier, :func:`confusion_pairs`).
- :func:`hierarchical_gmm`: a hierarchical Gaussian mixture passed through a fixed random tanh map; ``delta`` sets
  how far a sub-class sits from its siblings (small ``delta`` = strongly entangled).
- :func:`read_cifar100`: the paper's own data (CIFAR-100 in its python-pickle layout), flattened for an MLP.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

SUBSETS = ("forget", "adjacent", "remote")


@dataclass
class Split:
    """Tensors of one split (train or val): inputs ``x``, super-class labels ``y`` and subset codes ``part``."""

    x: torch.Tensor
    y: torch.Tensor
    part: np.ndarray  # 0 forget, 1 adjacent, 2 remote
    fine: np.ndarray  # the fine (sub-class) label, for plots

    def subset(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        """(x, y) of ``"forget"``, ``"adjacent"`` or ``"remote"`` (cached; treat as read-only)."""
        cache = self.__dict__.setdefault("_cache", {})
        if name not in cache:
            idx = torch.as_tensor(np.flatnonzero(self.part == SUBSETS.index(name)))
            cache[name] = (self.x[idx], self.y[idx])
        return cache[name]

    def retain(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(x, y) of D_r = D_r^adj + D_r^rem (cached)."""
        cache = self.__dict__.setdefault("_cache", {})
        if "retain" not in cache:
            idx = torch.as_tensor(np.flatnonzero(self.part != 0))
            cache["retain"] = (self.x[idx], self.y[idx])
        return cache["retain"]

    def sizes(self) -> dict:
        return {s: int((self.part == k).sum()) for k, s in enumerate(SUBSETS)}


@dataclass
class Dataset3:
    """A three-way data set: ``train`` and ``val`` splits and what they were built from."""

    name: str
    train: Split
    val: Split
    n_classes: int
    info: dict = field(default_factory=dict)

    @property
    def in_dim(self) -> int:
        return int(self.train.x.shape[1])


def _stratified_split(labels: np.ndarray, val_frac: float, rng: np.random.Generator):
    train, val = [], []
    for lab in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == lab))
        n_val = int(round(val_frac * len(idx)))
        val.append(idx[:n_val])
        train.append(idx[n_val:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(val))


def _make_split(x, fine, fine_to_super, forget_fine, adjacent_fine) -> Split:
    part = np.full(len(fine), 2, dtype=np.int64)
    part[np.isin(fine, adjacent_fine)] = 1
    part[fine == forget_fine] = 0
    y = np.asarray([fine_to_super[int(f)] for f in fine], dtype=np.int64)
    return Split(torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y), part, np.asarray(fine))


def best_pairing(weights: np.ndarray) -> list[tuple[int, int]]:
    """The perfect matching of ``n`` (even) items into pairs with the largest total symmetric weight (brute force)."""
    n = weights.shape[0]
    if n % 2:
        raise ValueError("best_pairing needs an even number of items")
    w = weights + weights.T

    def matchings(items):
        if not items:
            yield []
            return
        first, rest = items[0], items[1:]
        for k, other in enumerate(rest):
            for tail in matchings(rest[:k] + rest[k + 1:]):
                yield [(first, other)] + tail

    best, best_w = None, -np.inf
    for m in matchings(list(range(n))):
        total = sum(w[a, b] for a, b in m)
        if total > best_w + 1e-12:
            best, best_w = m, total
    return best


# The pairing :func:`confusion_pairs` returns (a unit test recomputes it): digits whose images a classifier confuses.
DIGIT_PAIRS = ((0, 6), (1, 8), (2, 3), (4, 7), (5, 9))


def confusion_pairs() -> tuple[list[tuple[int, int]], np.ndarray]:
    """Pair the ten digits by a digit classifier's confusions: the soft confusion matrix of out-of-fold
    probabilities (5-fold logistic regression on all 1797 images, fixed folds), then the perfect matching with
    the largest total symmetric confusion. The pairing is a property of the data set, not of the run's seed."""
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    d = load_digits()
    x, digits = d.data / 16.0, d.target
    proba = cross_val_predict(LogisticRegression(C=0.05, max_iter=300), x, digits,
                              cv=StratifiedKFold(5, shuffle=True, random_state=0), method="predict_proba")
    cm = np.stack([proba[digits == k].sum(0) for k in range(10)])
    np.fill_diagonal(cm, 0.0)
    return best_pairing(cm), cm


def digits_superclass(pairs="confusion", forget_digit: int = 3, seed: int = 0, val_frac: float = 0.3) -> Dataset3:
    """Digits relabelled into five two-digit super-classes; D_f = ``forget_digit``, D_r^adj = its partner.

    ``pairs``: ``"confusion"`` (:data:`DIGIT_PAIRS`, the pairing :func:`confusion_pairs` computes) or an explicit
    list of five digit pairs. The stratified 70/30 train/val split depends on ``seed``.
    """
    from sklearn.datasets import load_digits

    d = load_digits()
    x = d.data.astype(np.float32) / 16.0
    digits = d.target.astype(np.int64)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 91]))
    tr, va = _stratified_split(digits, val_frac, rng)
    if isinstance(pairs, str):
        if pairs != "confusion":
            raise ValueError(f"parameter 'pairs' got {pairs!r}; allowed: 'confusion' or a list of 5 digit pairs")
        pairs = DIGIT_PAIRS
    try:
        pairs = [tuple(int(v) for v in p) for p in pairs]
        ok = sorted(itertools.chain(*pairs)) == list(range(10)) and all(len(p) == 2 for p in pairs)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"parameter 'pairs' got {pairs!r}; allowed: 'confusion' or five pairs covering 0-9 once")
    pairs = sorted(pairs, key=lambda p: (forget_digit not in p, min(p)))  # forget super-class first
    fine_to_super = {dg: k for k, p in enumerate(pairs) for dg in p}
    partner = next(b if a == forget_digit else a for a, b in pairs if forget_digit in (a, b))
    info = {"pairs": pairs, "forget": [forget_digit], "adjacent": [partner]}
    return Dataset3(
        "digits",
        _make_split(x[tr], digits[tr], fine_to_super, forget_digit, [partner]),
        _make_split(x[va], digits[va], fine_to_super, forget_digit, [partner]),
        n_classes=5,
        info=info,
    )


def hierarchical_gmm(n_super: int = 10, n_sub: int = 5, d: int = 32, delta: float = 1.0, n_per: int = 300,
                     seed: int = 0, val_frac: float = 0.3, noise: float = 2.0) -> Dataset3:
    """Hierarchical Gaussian mixture: super-class centres c_s ~ N(0, 9 I), sub-class centres c_s + delta N(0, I),
    points = centre + N(0, I); then a fixed random 2-layer tanh map (so a linear model is not enough).

    D_f = sub-class 0 of super-class 0, D_r^adj = the other sub-classes of super-class 0, D_r^rem = the rest.
    The centres and the map depend on ``seed`` only, not on ``delta``, so a sweep over ``delta`` changes one thing.
    """
    base = np.random.SeedSequence([seed, 77])
    g_struct, g_pts, g_split = (np.random.default_rng(s) for s in base.spawn(3))
    c_super = 3.0 * g_struct.standard_normal((n_super, d))
    offsets = g_struct.standard_normal((n_super, n_sub, d))
    w1 = g_struct.standard_normal((d, d)) / np.sqrt(d)
    w2 = g_struct.standard_normal((d, d)) / np.sqrt(d)
    centres = c_super[:, None, :] + delta * offsets
    fine = np.repeat(np.arange(n_super * n_sub), n_per)
    z = centres.reshape(-1, d)[fine] + noise * g_pts.standard_normal((len(fine), d))
    x = np.tanh(np.tanh(z @ w1 / 3.0) @ w2 * 1.5)  # fixed random 2-layer tanh map (pre-activations of order 1)
    x = (x - x.mean(0)) / x.std(0)
    tr, va = _stratified_split(fine, val_frac, g_split)
    fine_to_super = {f: f // n_sub for f in range(n_super * n_sub)}
    adj = list(range(1, n_sub))
    info = {"delta": float(delta), "forget": [0], "adjacent": adj, "n_super": n_super, "n_sub": n_sub}
    return Dataset3(
        f"gmm(delta={delta:g})",
        _make_split(x[tr].astype(np.float32), fine[tr], fine_to_super, 0, adj),
        _make_split(x[va].astype(np.float32), fine[va], fine_to_super, 0, adj),
        n_classes=n_super,
        info=info,
    )


CIFAR_FORGET_FINE = 1  # "aquarium_fish", in the super-class "fish" (coarse label 1): the paper's Table 1 task


CIFAR_EXPECTED = ("the python version of CIFAR-100: a folder 'cifar-100-python' (or its parent) holding the pickled "
                  "dicts 'train' and 'test', each with b'data' (n x 3072 uint8), b'fine_labels' (0..99) and "
                  "b'coarse_labels' (0..19)")
CIFAR_FILES = ("train", "test")


def _find_cifar_folder(path, parameter: str = "data_path") -> Path:
    """The folder holding 'train' and 'test': ``path`` itself or its 'cifar-100-python' sub-folder."""
    from lib.common.userfiles import check_folder

    p = Path(path).expanduser()
    if p.is_dir() and not (p / "train").exists() and (p / "cifar-100-python").is_dir():
        p = p / "cifar-100-python"
    return check_folder(parameter, p, expected=CIFAR_EXPECTED, must_contain=CIFAR_FILES)


def _load_cifar_pickle(file: Path, parameter: str = "data_path") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(images n x 3072 uint8, fine labels, coarse labels) of one CIFAR-100 pickle, or a ``UserFileError``."""
    from lib.common.userfiles import UserFileError, read_pickle

    p = Path(file)
    d = read_pickle(parameter, p, expected=CIFAR_EXPECTED,
                    unpack_hint="unpack the CIFAR-100 archive first (tar xzf cifar-100-python.tar.gz)")
    missing = [k for k in (b"data", b"fine_labels", b"coarse_labels") if k not in d]
    if missing:
        raise UserFileError(parameter, p, f"the dict has no {', '.join(repr(m) for m in missing)}",
                            expected=CIFAR_EXPECTED)
    x = d[b"data"]
    if not isinstance(x, np.ndarray) or x.dtype != np.uint8 or x.ndim != 2 or x.shape[1] != 3072:
        found = (f"an array of shape {x.shape} and dtype {x.dtype}" if isinstance(x, np.ndarray)
                 else f"a {type(x).__name__}")
        raise UserFileError(parameter, p, f"b'data' is {found}", expected="b'data' a uint8 array of shape (n, 3072)")
    labels = []
    for key, hi in ((b"fine_labels", 99), (b"coarse_labels", 19)):
        try:
            lab = np.asarray(d[key])
        except Exception:  # noqa: BLE001
            lab = np.asarray([])
        if lab.ndim != 1 or lab.dtype.kind not in "iu" or len(lab) != len(x):
            raise UserFileError(parameter, p, f"{key!r} holds {len(lab) if lab.ndim == 1 else '?'} entries of kind "
                                f"{lab.dtype}, for {len(x)} images", expected=f"one integer in 0..{hi} per image")
        if len(lab) and (lab.min() < 0 or lab.max() > hi):
            raise UserFileError(parameter, p, f"{key!r} holds values outside 0..{hi} ({lab.min()}..{lab.max()})",
                                expected=f"one integer in 0..{hi} per image")
        labels.append(lab.astype(np.int64))
    return x, labels[0], labels[1]


def check_cifar100(path, parameter: str = "data_path") -> Path:
    """Check a user's CIFAR-100 folder (both pickles readable and consistent) and return the folder holding them;
    the declared loader of ``data_path`` (``UserFileError`` naming the parameter, the file and what is wrong)."""
    from lib.common.userfiles import UserFileError

    folder = _find_cifar_folder(path, parameter)
    fine_to_super = {}
    for name in CIFAR_FILES:
        _, fine, coarse = _load_cifar_pickle(folder / name, parameter)
        for f, c in zip(fine.tolist(), coarse.tolist()):
            if fine_to_super.setdefault(f, c) != c:
                raise UserFileError(parameter, folder / name, f"fine class {f} belongs to two super-classes "
                                    f"({fine_to_super[f]} and {c})", expected=CIFAR_EXPECTED)
    return folder


def read_cifar100(path, seed: int = 0, n_train_per_class: int = 100, n_val_per_class: int = 20,
                  forget_fine: int = CIFAR_FORGET_FINE) -> Dataset3:
    """The paper's Table-1 task from CIFAR-100's python pickles: 20 super-class labels, D_f = one fine class
    (default aquarium fish), D_r^adj = the other fine classes of its super-class, D_r^rem = the rest. Images are
    flattened to 3072 values in [0, 1] and standardised with the training mean and s.d.; at most
    ``n_train_per_class`` / ``n_val_per_class`` images per fine class are kept (a random subset, ``seed``), the test
    file serving as the validation split."""
    from lib.common.userfiles import UserFileError

    folder = check_cifar100(path)
    xtr, ftr, ctr = _load_cifar_pickle(folder / "train")
    xva, fva, cva = _load_cifar_pickle(folder / "test")
    if forget_fine not in set(ftr.tolist()):
        raise UserFileError("data_path", folder / "train", f"has no image of fine class {forget_fine}",
                            expected=CIFAR_EXPECTED)
    fine_to_super = {int(f): int(c) for f, c in zip(np.r_[ftr, fva], np.r_[ctr, cva])}
    sup = fine_to_super[forget_fine]
    adjacent = sorted(f for f, c in fine_to_super.items() if c == sup and f != forget_fine)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 100]))

    def take(fine, n):
        keep = [rng.permutation(np.flatnonzero(fine == f))[:n] for f in np.unique(fine)]
        return np.sort(np.concatenate(keep))

    itr, iva = take(ftr, n_train_per_class), take(fva, n_val_per_class)
    xtr, xva = xtr[itr].astype(np.float32) / 255.0, xva[iva].astype(np.float32) / 255.0
    mu, sd = xtr.mean(0), xtr.std(0) + 1e-6
    info = {"forget": [forget_fine], "adjacent": adjacent, "super_class": sup, "source": str(folder)}
    return Dataset3("cifar100", _make_split((xtr - mu) / sd, ftr[itr], fine_to_super, forget_fine, adjacent),
                    _make_split((xva - mu) / sd, fva[iva], fine_to_super, forget_fine, adjacent),
                    n_classes=20, info=info)
