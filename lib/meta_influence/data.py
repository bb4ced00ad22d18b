"""Few-shot tasks from 8x8 digit images: scikit-learn's digits (the offline default) or MNIST's IDX files
(``data_path``: a folder with the four files as distributed, plain or gzip-compressed), downsampled to 8x8.

Downsampling: each 28x28 MNIST image is zero-padded to 32x32 (two pixels each side) and averaged over 4x4 blocks,
then rescaled from 0..255 to 0..16, the range of scikit-learn's digits.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lib.common.mnist import MNIST_EXPECTED, read_mnist  # noqa: F401  (MNIST_EXPECTED re-exported for LOADERS)

from .bilevel import Tasks


def check_mnist(path) -> dict:
    """The loader the suite and the runner call on a user's ``data_path``."""
    return read_mnist(path, parameter="data_path")


def downsample_8x8(images: np.ndarray) -> np.ndarray:
    """(n, 28, 28) uint8 -> (n, 64) float in 0..16: pad to 32x32, mean over 4x4 blocks."""
    images = np.asarray(images, dtype=float)
    if images.ndim != 3:
        raise ValueError(f"downsample_8x8: images of shape {images.shape}; expected (n, rows, cols)")
    n, r, c = images.shape
    if (r, c) == (8, 8):
        return images.reshape(n, 64)
    pr, pc = (-r) % 8, (-c) % 8
    padded = np.pad(images, ((0, 0), (pr // 2, pr - pr // 2), (pc // 2, pc - pc // 2)))
    br, bc = padded.shape[1] // 8, padded.shape[2] // 8
    blocks = padded.reshape(n, 8, br, 8, bc).mean(axis=(2, 4))
    return blocks.reshape(n, 64) * (16.0 / 255.0)


@dataclass
class Pools:
    """Meta-train and meta-test image pools (disjoint), 64 raw pixel features each, labels 0..9."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    source: str


def load_pools(rng: np.random.Generator, data_path=None, test_frac: float = 0.4) -> Pools:
    """Digits split at random into disjoint meta-train / meta-test pools; MNIST: its train and t10k files."""
    if data_path is None:
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        perm = rng.permutation(len(X))
        n_test = int(round(test_frac * len(X)))
        te, tr = perm[:n_test], perm[n_test:]
        return Pools(X[tr].astype(float), y[tr], X[te].astype(float), y[te], "sklearn.datasets.load_digits")
    m = read_mnist(data_path)
    return Pools(downsample_8x8(m["train_images"]), m["train_labels"].astype(int),
                 downsample_8x8(m["test_images"]), m["test_labels"].astype(int), str(data_path))


def standardiser(X: np.ndarray):
    mean = X.mean(0)
    std = X.std(0)
    std = np.where(std < 1e-8, 1.0, std)
    return mean, std


def features(X: np.ndarray, mean: np.ndarray, std: np.ndarray) -> np.ndarray:
    """Standardised pixels and a ones column (d = 65)."""
    Z = (X - mean) / std
    return np.concatenate([Z, np.ones((len(Z), 1))], axis=1)


def make_tasks(X: np.ndarray, y: np.ndarray, n_tasks: int, rng: np.random.Generator, n_way: int = 5,
               k_shot: int = 5, q_shot: int = 10) -> Tasks:
    """n_tasks N-way K-shot tasks: random classes, a random label permutation, K support and q_shot query images
    per class drawn without replacement from the pool (support and query disjoint within a task).

    Returns Tasks with ``meta["support_idx"], meta["query_idx"]`` (rows of the pool) and ``meta["classes"]``."""
    classes_all = np.unique(y)
    if len(classes_all) < n_way:
        raise ValueError(f"make_tasks: the pool holds {len(classes_all)} classes; {n_way}-way tasks need {n_way}")
    by_class = {c: np.flatnonzero(y == c) for c in classes_all}
    need = k_shot + q_shot
    ok = [c for c in classes_all if len(by_class[c]) >= need]
    if len(ok) < n_way:
        counts = {int(c): len(v) for c, v in by_class.items()}
        raise ValueError(f"make_tasks: {n_way}-way tasks with {k_shot} support + {q_shot} query images per class need "
                         f"{need} images in at least {n_way} classes; the pool has {counts}")
    ok = np.array(ok)
    S_idx = np.zeros((n_tasks, n_way * k_shot), int)
    Q_idx = np.zeros((n_tasks, n_way * q_shot), int)
    ys = np.zeros((n_tasks, n_way * k_shot), int)
    yq = np.zeros((n_tasks, n_way * q_shot), int)
    cls = np.zeros((n_tasks, n_way), int)
    for t in range(n_tasks):
        chosen = rng.choice(ok, n_way, replace=False)
        labels = rng.permutation(n_way)
        cls[t] = chosen
        for c, lab in zip(chosen, labels):
            pick = rng.choice(by_class[c], need, replace=False)
            ks = slice(lab * k_shot, (lab + 1) * k_shot)
            qs = slice(lab * q_shot, (lab + 1) * q_shot)
            S_idx[t, ks], Q_idx[t, qs] = pick[:k_shot], pick[k_shot:]
            ys[t, ks], yq[t, qs] = lab, lab
    tasks = Tasks(X[S_idx], ys, X[Q_idx], yq, n_way)
    tasks.meta.update(support_idx=S_idx, query_idx=Q_idx, classes=cls)
    return tasks


def inject_task_noise(tasks: Tasks, frac: float, rng: np.random.Generator):
    """Shuffle the labels of a fraction of the tasks (support and query together). Returns (tasks, noisy mask)."""
    T = len(tasks)
    k = int(round(frac * T))
    noisy = np.zeros(T, bool)
    noisy[rng.choice(T, k, replace=False)] = True
    ys, yq = tasks.ys.copy(), tasks.yq.copy()
    n = ys.shape[1]
    for t in np.flatnonzero(noisy):
        allv = rng.permutation(np.concatenate([ys[t], yq[t]]))
        ys[t], yq[t] = allv[:n], allv[n:]
    out = Tasks(tasks.Xs, ys, tasks.Xq, yq, tasks.n_classes, tasks.s, tasks.q, dict(tasks.meta))
    out.meta["noisy_tasks"] = noisy
    return out, noisy


def inject_instance_noise(tasks: Tasks, frac: float, rng: np.random.Generator, exclude: np.ndarray | None = None):
    """Flip a fraction of the support labels (of the tasks not in ``exclude``) to a uniformly drawn other label.
    Returns (tasks, flipped mask (T, n)), the mask marking exactly the changed labels."""
    T, n = tasks.ys.shape
    C = tasks.n_classes
    cand = np.ones((T, n), bool)
    if exclude is not None:
        cand[np.asarray(exclude, bool)] = False
    flat = np.flatnonzero(cand.ravel())
    k = int(round(frac * len(flat)))
    pick = rng.choice(flat, k, replace=False)
    ys = tasks.ys.copy().ravel()
    ys[pick] = (ys[pick] + rng.integers(1, C, k)) % C
    ys = ys.reshape(T, n)
    flipped = ys != tasks.ys
    out = Tasks(tasks.Xs, ys, tasks.Xq, tasks.yq, C, tasks.s, tasks.q, dict(tasks.meta))
    out.meta["flipped"] = flipped
    return out, flipped


@dataclass
class MetaData:
    train: Tasks  # noisy meta-train tasks
    test: Tasks  # clean meta-test tasks
    clean_train: Tasks  # the same tasks before noise
    noisy_tasks: np.ndarray
    flipped: np.ndarray
    source: str


def make_meta_data(rng: np.random.Generator, n_tasks: int, n_test_tasks: int, *, n_way=5, k_shot=5, q_shot=10,
                   task_noise=0.1, instance_noise=0.1, data_path=None) -> MetaData:
    pools = load_pools(rng, data_path)
    mean, std = standardiser(pools.X_train)
    Xtr, Xte = features(pools.X_train, mean, std), features(pools.X_test, mean, std)
    clean = make_tasks(Xtr, pools.y_train, n_tasks, rng, n_way, k_shot, q_shot)
    test = make_tasks(Xte, pools.y_test, n_test_tasks, rng, n_way, k_shot, q_shot)
    noisy_t, noisy_mask = inject_task_noise(clean, task_noise, rng)
    train, flipped = inject_instance_noise(noisy_t, instance_noise, rng, exclude=noisy_mask)
    return MetaData(train, test, clean, noisy_mask, flipped, pools.source)
