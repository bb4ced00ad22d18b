"""Data for the HRT notebook: offline stand-ins for the paper's benchmarks, and a reader for kin8nm files.

kin8nm (and the paper's other UCI/OpenML sets) cannot be downloaded here. The defaults are:

- ``kin_like``: forward kinematics of an 8-joint revolute arm (the DELVE "kin" family's construction): inputs are
  the 8 joint angles, the target is the end effector's distance to a fixed point, plus Gaussian noise
  ("medium": noise variance = 1/10 of the signal variance).
- ``friedman1``/``friedman2``/``friedman3``: scikit-learn's Friedman generators with Breiman's noise levels.
- ``diabetes``: scikit-learn's shipped diabetes data (442 x 10, real).
- ``hinge``: a planted piecewise-linear oblique target y = max(a1'x + b1, a2'x + b2) - max(a3'x + b3, 0) + noise.
- ``sin1d`` / ``smooth2d``: noiseless smooth targets for the approximation-rate figure.

A user who has the paper's kin8nm file passes ``data_path``: :func:`read_kin8nm` reads it as distributed (8 inputs
then the target on each row; DELVE's copy is whitespace-separated, the HRT repository's copy comma-separated).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Optional, Tuple

import numpy as np

DATASETS = ("kin_like", "friedman1", "friedman2", "friedman3", "diabetes", "hinge")
LABELS = {
    "kin_like": "kin-like (8-D arm)",
    "kin8nm": "kin8nm (file)",
    "friedman1": "Friedman #1",
    "friedman2": "Friedman #2",
    "friedman3": "Friedman #3",
    "diabetes": "diabetes",
    "hinge": "oblique hinge",
}
KIN_NOISE_SNR = {"none": np.inf, "medium": 10.0, "high": 2.0}
KIN_LINKS = np.array([1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3])
KIN_TARGET = np.array([3.0, 1.5, 1.0])
KIN_COLUMNS = 9


def _rot(axis: str, angle: np.ndarray) -> np.ndarray:
    """Rotation matrices (n, 3, 3) about a coordinate axis."""
    c, s = np.cos(angle), np.sin(angle)
    R = np.zeros(angle.shape + (3, 3))
    i, j = {"z": (0, 1), "y": (2, 0), "x": (1, 2)}[axis]
    k = 3 - i - j
    R[:, k, k] = 1.0
    R[:, i, i] = c
    R[:, j, j] = c
    R[:, i, j] = -s
    R[:, j, i] = s
    return R


def kin_forward(theta: np.ndarray) -> np.ndarray:
    """Noiseless kin-like target: distance from the arm's end effector to ``KIN_TARGET``.

    Joint k rotates about z (k even) or y (k odd) and is followed by a link of length ``KIN_LINKS[k]`` along the
    local x axis; ``theta`` is (n, 8).
    """
    theta = np.atleast_2d(np.asarray(theta, dtype=float))
    n = theta.shape[0]
    R = np.broadcast_to(np.eye(3), (n, 3, 3)).copy()
    p = np.zeros((n, 3))
    for k, length in enumerate(KIN_LINKS):
        R = R @ _rot("z" if k % 2 == 0 else "y", theta[:, k])
        p = p + length * R[:, :, 0]
    return np.linalg.norm(p - KIN_TARGET, axis=1)


def make_kin_like(n: int = 8192, rng: Optional[np.random.Generator] = None, noise: str = "medium"):
    """(X, y): 8 joint angles uniform in [-pi/4, pi/4] and the noisy end-effector distance."""
    if noise not in KIN_NOISE_SNR:
        raise ValueError(f"parameter 'noise' got {noise!r}; allowed: one of {', '.join(map(repr, KIN_NOISE_SNR))}")
    rng = rng if rng is not None else np.random.default_rng(0)
    X = rng.uniform(-np.pi / 4, np.pi / 4, size=(n, 8))
    f = kin_forward(X)
    snr = KIN_NOISE_SNR[noise]
    sd = 0.0 if np.isinf(snr) else float(np.std(f)) / np.sqrt(snr)
    return X, f + sd * rng.standard_normal(n)


def hinge_coefficients(d: int = 4):
    """The planted hinge target's pieces (fixed for a given d, whatever the run's seed)."""
    g = np.random.default_rng(20260205 + d)
    A = g.standard_normal((3, d))
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    A *= np.array([[1.0], [1.5], [2.0]])
    b = np.array([0.2, -0.1, 0.3])
    return A, b


def hinge_function(X: np.ndarray) -> np.ndarray:
    """y = max(a1'x + b1, a2'x + b2) - max(a3'x + b3, 0): four linear regions, all boundaries oblique."""
    A, b = hinge_coefficients(X.shape[1])
    P = X @ A.T + b
    return np.maximum(P[:, 0], P[:, 1]) - np.maximum(P[:, 2], 0.0)


def make_hinge_target(n: int = 2000, d: int = 4, rng: Optional[np.random.Generator] = None, noise_sd: float = 0.1):
    """(X, y): x uniform in [-1, 1]^d, the planted oblique hinge target plus N(0, noise_sd^2)."""
    rng = rng if rng is not None else np.random.default_rng(0)
    X = rng.uniform(-1.0, 1.0, size=(n, d))
    return X, hinge_function(X) + noise_sd * rng.standard_normal(n)


def sin1d(x: np.ndarray) -> np.ndarray:
    return np.sin(3.0 * np.asarray(x).reshape(-1))


def smooth2d(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X)
    return np.sin(2.0 * X[:, 0]) * np.cos(2.0 * X[:, 1])


def make_smooth(kind: str, n: int, rng: np.random.Generator):
    """Noiseless training sample of ``sin1d`` (x in [-1, 1]) or ``smooth2d`` (x in [-1, 1]^2)."""
    if kind == "sin1d":
        X = rng.uniform(-1, 1, size=(n, 1))
        return X, sin1d(X)
    if kind == "smooth2d":
        X = rng.uniform(-1, 1, size=(n, 2))
        return X, smooth2d(X)
    raise ValueError(f"parameter 'kind' got {kind!r}; allowed: 'sin1d', 'smooth2d'")


def smooth_grid(kind: str, m: int):
    """A dense evaluation grid for the rate figure."""
    if kind == "sin1d":
        X = np.linspace(-1, 1, m).reshape(-1, 1)
        return X, sin1d(X)
    g = np.linspace(-1, 1, m)
    X = np.stack(np.meshgrid(g, g), axis=-1).reshape(-1, 2)
    return X, smooth2d(X)


KIN8NM_EXPECTED = (f"kin8nm as distributed: {KIN_COLUMNS} numbers per row (8 inputs, then the target), separated "
                   f"by whitespace (DELVE) or by commas (HRT repository), no header")


def read_kin8nm(data_path) -> Tuple[np.ndarray, np.ndarray]:
    """Read kin8nm as distributed: one row per case, 8 inputs then the target, no header.

    DELVE's ``Dataset.data`` separates fields by whitespace (DELVE ships it gzip-compressed as ``Dataset.data.gz``,
    which is read as is); the HRT repository's ``kin8nm.data`` by commas (spaces after a comma are allowed).
    Built on :func:`lib.common.userfiles.read_numeric_table`, so another compression, a binary, empty or
    undecodable file, another delimiter, a mix of the two layouts, a header, another column count and missing or
    non-finite values all raise :class:`~lib.common.userfiles.UserFileError` (a ``ValueError``) naming
    ``data_path``, the line and what kin8nm looks like. Repeated reads of an unchanged file are served from memory.
    """
    from lib.common.userfiles import check_file

    path = check_file("data_path", data_path, expected=KIN8NM_EXPECTED)
    st = path.stat()
    data = _read_kin8nm_cached(str(path.resolve()), st.st_mtime_ns, st.st_size, str(data_path))
    return data[:, :-1].copy(), data[:, -1].copy()


@lru_cache(maxsize=4)
def _read_kin8nm_cached(resolved: str, mtime_ns: int, size: int, shown: str) -> np.ndarray:
    from lib.common.userfiles import UserFileError, read_numeric_table

    try:
        data, _ = read_numeric_table("data_path", shown, expected=KIN8NM_EXPECTED, n_cols=KIN_COLUMNS,
                                     delimiter=("whitespace", ","), header=False, comments=(), min_rows=2,
                                     allow_gzip=True)
    except UserFileError as err:
        if "not a number" in err.problem and err.line is not None and err.line <= 1:
            raise UserFileError("data_path", shown, err.problem + " (a header row? kin8nm has none)",
                                expected=KIN8NM_EXPECTED, line=err.line) from None
        raise
    if len(np.unique(data[:, -1])) < 2:
        raise UserFileError("data_path", shown, "the target column (the last) is constant",
                            expected=KIN8NM_EXPECTED)
    data.setflags(write=False)
    return data


def load_dataset(name: str, n: int, rng: np.random.Generator, data_path=None):
    """(X, y, label) for a benchmark data set; ``n`` caps the size (ignored by diabetes).

    ``name="kin_like"`` with ``data_path`` reads the kin8nm file instead (a random subset of n rows when the file
    has more).
    """
    from sklearn.datasets import load_diabetes, make_friedman1, make_friedman2, make_friedman3

    seed = int(rng.integers(0, 2**31 - 1))
    if name == "kin_like":
        if data_path is not None:
            X, y = read_kin8nm(data_path)
            if len(y) > n:
                keep = np.sort(rng.choice(len(y), size=n, replace=False))
                X, y = X[keep], y[keep]
            return X, y, LABELS["kin8nm"]
        X, y = make_kin_like(n, rng)
    elif name == "friedman1":
        X, y = make_friedman1(n_samples=n, n_features=10, noise=1.0, random_state=seed)
    elif name == "friedman2":
        X, y = make_friedman2(n_samples=n, noise=125.0, random_state=seed)
    elif name == "friedman3":
        X, y = make_friedman3(n_samples=n, noise=0.1, random_state=seed)
    elif name == "diabetes":
        X, y = load_diabetes(return_X_y=True)
    elif name == "hinge":
        X, y = make_hinge_target(n, 4, rng)
    else:
        raise ValueError(f"parameter 'datasets' has {name!r}; allowed: {', '.join(DATASETS)}")
    return X, y, LABELS[name]
