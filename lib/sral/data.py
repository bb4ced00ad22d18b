"""Data for the SRAL reproduction: task R (Gaussian-mixture sets with an exact-W2 ground truth), task C (digits
as 2-D point clouds, or ModelNet40's OFF meshes surface-sampled), task E (topic set expansion), and padding.

Everything is numpy; :func:`pad_sets` turns a list of sets of different sizes into one padded array and a mask,
the only form the encoders see (no Python loop over sets in training).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lib.common.userfiles import UserFileError, check_folder, read_lines

D_IN = 4  # task R's ambient dimension
N_RANGE = (16, 48)  # task R's set sizes (inclusive)
EVAL_SEED = 2026  # the seed of task R's committed evaluation sets (database + queries); training pools never use it
N_DB_DISTS, DB_PER_DIST, N_QUERIES = 250, 4, 200


# --- task R: sets drawn from random Gaussian mixtures ------------------------------------------------------------
def random_mixtures(n_dists: int, rng: np.random.Generator, d: int = D_IN):
    """``n_dists`` random mixtures of 2-4 Gaussians in R^d: (weights, means, scales) lists.

    Component means ~ N(0, I), isotropic scales ~ U(0.3, 1.0): heavily overlapping mixtures whose sets differ in
    spread and shape as much as in location (the brief's advice: keep PSWE off the ceiling)."""
    out = []
    for _ in range(n_dists):
        k = int(rng.integers(2, 5))
        w = rng.dirichlet(np.full(k, 2.0))
        mu = rng.normal(0.0, 1.0, (k, d))
        s = rng.uniform(0.3, 1.0, k)
        out.append((w, mu, s))
    return out


def sample_mixture(mix, n: int, rng: np.random.Generator) -> np.ndarray:
    w, mu, s = mix
    comp = rng.choice(len(w), size=n, p=w)
    return (mu[comp] + s[comp, None] * rng.normal(size=(n, mu.shape[1]))).astype(np.float32)


def gmm_set_pool(n_dists: int, sets_per_dist: int, rng: np.random.Generator, n_range=N_RANGE, d: int = D_IN):
    """``n_dists * sets_per_dist`` sets (lists of (n, d) arrays, n uniform in ``n_range``) and their source ids."""
    mixes = random_mixtures(n_dists, rng, d)
    sets, labels = [], []
    for j, mix in enumerate(mixes):
        for _ in range(sets_per_dist):
            sets.append(sample_mixture(mix, int(rng.integers(n_range[0], n_range[1] + 1)), rng))
            labels.append(j)
    return sets, np.asarray(labels), mixes


def task_r_eval_sets(seed: int = EVAL_SEED):
    """The committed evaluation sets of task R: a 1000-set database (250 mixtures x 4 sets) and 200 queries (fresh
    sets of 200 of those mixtures). Regenerated from ``seed``; ``data/sral/task_r_w2.npz`` holds their exact W2."""
    rng = np.random.default_rng(seed)
    db, db_lab, mixes = gmm_set_pool(N_DB_DISTS, DB_PER_DIST, rng)
    q_src = rng.choice(N_DB_DISTS, N_QUERIES, replace=False)
    queries = [sample_mixture(mixes[j], int(rng.integers(N_RANGE[0], N_RANGE[1] + 1)), rng) for j in q_src]
    return db, db_lab, queries, q_src


def fingerprint(sets) -> str:
    """sha256 of the sets' float32 bytes (sizes included): ties the W2 file to the sets it was computed on."""
    h = hashlib.sha256()
    for s in sets:
        h.update(np.int64(len(s)).tobytes())
        h.update(np.ascontiguousarray(s, dtype=np.float32).tobytes())
    return h.hexdigest()


# --- padding ------------------------------------------------------------------------------------------------------
def pad_sets(sets, n_max: int | None = None):
    """(X (B, n_max, d) float32 with zeros in the padding, mask (B, n_max) bool: True on real elements)."""
    n = np.array([len(s) for s in sets])
    n_max = int(n.max()) if n_max is None else n_max
    d = sets[0].shape[1]
    X = np.zeros((len(sets), n_max, d), np.float32)
    mask = np.arange(n_max)[None, :] < n[:, None]
    for b, s in enumerate(sets):
        X[b, : len(s)] = s
    return X, mask


# --- task C: digits as 2-D point clouds ---------------------------------------------------------------------------
def digits_point_clouds(n_points: int, rng: np.random.Generator, rotate_deg: float = 15.0):
    """scikit-learn's 8x8 digits as 2-D point clouds: ``n_points`` pixel coordinates drawn with probability
    proportional to intensity, jitter U(-0.5, 0.5), a random rotation within +-``rotate_deg`` and scale 0.9-1.1,
    centred and divided by 4. Returns (X (N, n_points, 2) float32, y)."""
    from sklearn.datasets import load_digits

    imgs, y = load_digits(return_X_y=True)
    N = len(imgs)
    p = imgs / imgs.sum(1, keepdims=True)
    u = rng.random((N, n_points))
    idx = np.minimum((p.cumsum(1)[:, None, :] < u[:, :, None]).sum(-1), 63)  # inverse-CDF sampling, all at once
    pts = np.stack([idx % 8, 7 - idx // 8], -1).astype(float) + rng.uniform(-0.5, 0.5, (N, n_points, 2)) - 3.5
    a = np.deg2rad(rng.uniform(-rotate_deg, rotate_deg, N))
    sc = rng.uniform(0.9, 1.1, N)
    R = np.stack([np.stack([np.cos(a), -np.sin(a)], -1), np.stack([np.sin(a), np.cos(a)], -1)], -2) * sc[:, None, None]
    return (np.einsum("nij,npj->npi", R, pts) / 4.0).astype(np.float32), y


# --- task C with the user's data: ModelNet40's OFF meshes ---------------------------------------------------------
OFF_EXPECTED = ("an OFF mesh as in ModelNet40: a line 'OFF' (or 'OFF' glued to the counts, 'OFF490 518 0'), a line "
                "'n_vertices n_faces n_edges', n_vertices lines 'x y z', n_faces lines 'k i_1 ... i_k' (k >= 3, "
                "vertex indices < n_vertices)")
MODELNET_EXPECTED = ("ModelNet40's folder layout: <root>/<class>/{train,test}/*.off, each file " + OFF_EXPECTED)


def read_off(path, parameter: str = "data_path"):
    """(vertices (V, 3) float, faces list of index tuples) of an OFF file, or :class:`UserFileError`."""
    lines = read_lines(parameter, path, expected=OFF_EXPECTED)
    ln0, first = lines[0]
    if not first.upper().startswith("OFF"):
        raise UserFileError(parameter, path, f"the header is {first[:40]!r}, not 'OFF'", expected=OFF_EXPECTED,
                            line=ln0)
    rest = first[3:].strip()
    if rest:  # ModelNet40's known defect: 'OFF' glued to the counts
        counts_line, body = (ln0, rest), lines[1:]
    else:
        if len(lines) < 2:
            raise UserFileError(parameter, path, "the file ends after the header", expected=OFF_EXPECTED)
        counts_line, body = lines[1], lines[2:]
    f = counts_line[1].split()
    if len(f) != 3 or not all(t.isdigit() for t in f):
        raise UserFileError(parameter, path, f"the counts line is {counts_line[1][:60]!r}, not three non-negative "
                            "integers 'n_vertices n_faces n_edges'", expected=OFF_EXPECTED, line=counts_line[0])
    nv, nf = int(f[0]), int(f[1])
    if nv < 3 or nf < 1:
        raise UserFileError(parameter, path, f"{nv} vertices and {nf} faces: a mesh needs >= 3 vertices and >= 1 face",
                            expected=OFF_EXPECTED, line=counts_line[0])
    if len(body) != nv + nf:
        raise UserFileError(parameter, path, f"the header promises {nv} vertices + {nf} faces = {nv + nf} lines, the "
                            f"file has {len(body)}", expected=OFF_EXPECTED)
    V = np.empty((nv, 3))
    for i, (ln, s) in enumerate(body[:nv]):
        t = s.split()
        if len(t) != 3:
            raise UserFileError(parameter, path, f"a vertex line with {len(t)} fields, not 3 ({s[:60]!r})",
                                expected=OFF_EXPECTED, line=ln)
        try:
            V[i] = [float(x) for x in t]
        except ValueError:
            raise UserFileError(parameter, path, f"a vertex line that is not three numbers ({s[:60]!r})",
                                expected=OFF_EXPECTED, line=ln) from None
        if not np.isfinite(V[i]).all():
            raise UserFileError(parameter, path, f"a vertex that is not finite ({s[:60]!r})", expected=OFF_EXPECTED,
                                line=ln)
    faces = []
    for ln, s in body[nv:]:
        t = s.split()
        if not all(x.isdigit() for x in t) or len(t) < 4 or int(t[0]) < 3 or len(t) < 1 + int(t[0]):
            raise UserFileError(parameter, path, f"a face line that is not 'k i_1 ... i_k' with k >= 3 ({s[:60]!r})",
                                expected=OFF_EXPECTED, line=ln)
        k = int(t[0])
        if len(t) not in (1 + k, 1 + k + 3, 1 + k + 4):  # OFF allows an optional RGB(A) colour after the indices
            raise UserFileError(parameter, path, f"a face line with {len(t) - 1} fields after k = {k} ({s[:60]!r})",
                                expected=OFF_EXPECTED, line=ln)
        idx = tuple(int(x) for x in t[1: 1 + k])
        if max(idx) >= nv:
            raise UserFileError(parameter, path, f"a face names vertex {max(idx)}, but there are {nv}",
                                expected=OFF_EXPECTED, line=ln)
        faces.append(idx)
    return V, faces


def sample_surface(V: np.ndarray, faces, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` points uniform on the mesh surface (faces fan-triangulated, triangles drawn by area), centred and
    scaled into the unit ball."""
    tri = np.array([(f[0], f[j], f[j + 1]) for f in faces for j in range(1, len(f) - 1)])
    A, B, C = V[tri[:, 0]], V[tri[:, 1]], V[tri[:, 2]]
    area = 0.5 * np.linalg.norm(np.cross(B - A, C - A), axis=1)
    if not area.sum() > 0:
        area = np.ones(len(tri))
    t = rng.choice(len(tri), n, p=area / area.sum())
    r1, r2 = np.sqrt(rng.random(n))[:, None], rng.random(n)[:, None]
    P = (1 - r1) * A[t] + r1 * (1 - r2) * B[t] + r1 * r2 * C[t]
    P -= P.mean(0)
    return (P / max(np.linalg.norm(P, axis=1).max(), 1e-12)).astype(np.float32)


@dataclass
class CloudData:
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    classes: list
    source: str


def read_modelnet(path, parameter: str = "data_path", n_points: int = 64, seed: int = 0,
                  max_per_class: int | None = None) -> CloudData:
    """ModelNet40 (or any folder <class>/{train,test}/*.off) as surface-sampled point clouds of ``n_points``."""
    root = check_folder(parameter, path, expected=MODELNET_EXPECTED, must_contain=("*/train/*.off",))
    classes = sorted(p.name for p in root.iterdir() if p.is_dir() and any((p / "train").glob("*.off")))
    rng = np.random.default_rng(seed)
    out = {}
    for split in ("train", "test"):
        X, y = [], []
        for c, name in enumerate(classes):
            files = sorted((root / name / split).glob("*.off"))
            if max_per_class is not None:
                files = files[:max_per_class]
            for f in files:
                V, F = read_off(f, parameter)
                X.append(sample_surface(V, F, n_points, rng))
                y.append(c)
        if not X:
            raise UserFileError(parameter, path, f"no {split} meshes (<class>/{split}/*.off)",
                                expected=MODELNET_EXPECTED)
        out[split] = (np.stack(X), np.asarray(y))
    if len(classes) < 2:
        raise UserFileError(parameter, path, f"{len(classes)} class folder(s); classification needs >= 2",
                            expected=MODELNET_EXPECTED)
    return CloudData(*out["train"], *out["test"], classes, f"OFF meshes in {root}")


def check_modelnet(path) -> CloudData:
    """The loader the suite and the runner call on a user's ``data_path``."""
    return read_modelnet(path, parameter="data_path", n_points=16, max_per_class=None)


def digits_cloud_data(n_points: int, rng: np.random.Generator, n_test: int = 497) -> CloudData:
    X, y = digits_point_clouds(n_points, rng)
    perm = rng.permutation(len(X))
    te, tr = perm[:n_test], perm[n_test:]
    return CloudData(X[tr], y[tr], X[te], y[te], [str(k) for k in range(10)], "scikit-learn digits as 2-D clouds")


# --- task E: topic set expansion ----------------------------------------------------------------------------------
def topic_vocab(rng: np.random.Generator, n_words: int = 2000, n_topics: int = 50, d: int = 16,
                spread: float = 0.8):
    """A vocabulary of ``n_words`` embeddings in R^d, ``n_words / n_topics`` per topic, each topic a Gaussian
    (centre ~ N(0, I), isotropic scale ``spread`` x U(0.7, 1.3)). Returns (E (n_words, d) float32, topic ids)."""
    per = n_words // n_topics
    centres = rng.normal(size=(n_topics, d))
    sc = spread * rng.uniform(0.7, 1.3, n_topics)
    topic = np.repeat(np.arange(n_topics), per)
    E = centres[topic] + sc[topic, None] * rng.normal(size=(len(topic), d))
    return E.astype(np.float32), topic
