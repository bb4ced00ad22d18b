"""Loading the shipped data sets (``data/nexco/*.npz``), or regenerating them, as model-ready objects."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lib.common import data_dir

from .diffusion import TrainData
from .instances import COORD_SCALE, GraphBatch, edges_of, knn_edges, load_npz, tour_edge_labels, unpack_adjacency
from .make_data import DATASETS, SLUG, build


@dataclass
class MISSet:
    name: str
    adjs: list
    labels: np.ndarray  # (count, n) int8
    opt: np.ndarray
    optimal: np.ndarray

    def __len__(self):
        return len(self.adjs)

    def batch(self, idx=None) -> GraphBatch:
        idx = range(len(self)) if idx is None else idx
        return GraphBatch.from_adjacency([self.adjs[i] for i in idx])

    def subset(self, idx) -> "MISSet":
        idx = np.asarray(idx, dtype=np.int64)
        return MISSet(self.name, [self.adjs[i] for i in idx], self.labels[idx], self.opt[idx], self.optimal[idx])

    def train_data(self, idx=None) -> TrainData:
        idx = range(len(self)) if idx is None else idx
        return TrainData("mis", [self.adjs[i].shape[0] for i in idx], [edges_of(self.adjs[i]) for i in idx],
                         [self.labels[i] for i in idx])


@dataclass
class TSPSet:
    name: str
    coords: np.ndarray  # (count, n, 2) float
    tours: np.ndarray
    length: np.ndarray
    optimal: np.ndarray
    k: int = 10  # sparse graph: symmetrised k-nearest neighbours

    def __len__(self):
        return len(self.coords)

    def edges(self, i) -> np.ndarray:
        return knn_edges(self.coords[i], self.k)

    def batch(self, idx=None) -> GraphBatch:
        idx = list(range(len(self)) if idx is None else idx)
        return GraphBatch.from_edge_lists([self.coords.shape[1]] * len(idx), [self.edges(i) for i in idx],
                                          [self.coords[i] for i in idx])

    def train_data(self, idx=None) -> TrainData:
        idx = list(range(len(self)) if idx is None else idx)
        edges = [self.edges(i) for i in idx]
        labels = [tour_edge_labels(self.tours[i], e) for i, e in zip(idx, edges)]
        return TrainData("tsp", [self.coords.shape[1]] * len(idx), edges, labels, [self.coords[i] for i in idx])


def dataset_path(name: str, folder: Path | None = None) -> Path:
    return (Path(folder) if folder is not None else data_dir(SLUG)) / f"{name}.npz"


def provenance(folder: Path | None = None) -> dict:
    p = (Path(folder) if folder is not None else data_dir(SLUG)) / "provenance.json"
    return json.loads(p.read_text()) if p.exists() else {}


def load_arrays(name: str, regenerate: bool = False, count: int | None = None) -> dict:
    """The arrays of data set ``name`` (its first ``count`` instances): read from ``data/nexco/``, or with
    ``regenerate=True`` rebuilt by :func:`lib.nexco.make_data.build` (instances and reference solutions) and
    compared with the shipped file."""
    if name not in DATASETS:
        raise ValueError(f"data set {name!r}; allowed: {sorted(DATASETS)}")
    path = dataset_path(name)
    if not regenerate:
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing; run `python -m lib.nexco.make_data --only {name}`")
        a = load_npz(path)
        return {k: (v[:count] if (count is not None and np.ndim(v)) else v) for k, v in a.items()}
    arrays, prov = build(name, count=count, verbose=False)
    if path.exists():
        shipped = load_npz(path)
        k = prov["count"]
        differ = [key for key, v in arrays.items()
                  if not np.array_equal(v, shipped[key][:k] if np.ndim(v) else shipped[key])]
        print(f"regenerated {k} instances of {name} in {prov['total_seconds']} s: "
              + ("identical to the shipped file" if not differ else f"differs from the shipped file in {differ}"))
    return arrays


def load_mis(name: str, regenerate: bool = False, count: int | None = None) -> MISSet:
    a = load_arrays(name, regenerate, count)
    n = int(a["n"])
    adjs = unpack_adjacency(a["adj_bits"], n)
    labels = np.unpackbits(a["labels"], axis=1, count=n).astype(np.int8)
    return MISSet(name, adjs, labels, a["opt"].astype(float), a["optimal"].astype(bool))


def load_tsp(name: str, regenerate: bool = False, count: int | None = None, k: int = 10) -> TSPSet:
    a = load_arrays(name, regenerate, count)
    coords = a["coords"].astype(np.float64) / COORD_SCALE
    return TSPSet(name, coords, a["tours"].astype(np.int64), a["length"], a["optimal"].astype(bool), k)
