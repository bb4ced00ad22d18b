"""Regenerate the small .uai fixtures under ``data/spanning_tree_map/``.

    python -m lib.spanning_tree_map.make_data

Every file is a MARKOV network in the UAI inference-competition format, generated here (seeded) from this package's
instance families; none is a competition instance. ``mixed_domains_3x3.uai`` is written by hand-rolled text to
exercise what the writer never produces (domains of different sizes, a variable without a unary factor, a pairwise
scope given in decreasing order, two factors on one pair, a zero potential); ``malformed/arity3.uai`` has a
three-variable factor, which the reader must refuse.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from lib.common import data_dir

from .generators import grid_potts, ising_grid, pci_like
from .io import write_uai

SLUG = "spanning_tree_map"
SEED = 2026

FILES = {
    "ising_grid_6x6.uai": "UAI-2008-style Ising spin glass, 6x6 grid, sigma = 2 (binary)",
    "potts_grid_5x5_attractive.uai": "attractive Potts grid 5x5, K = 3, coupling c = 3",
    "pci_like_hex.uai": "PCI-like cell network on a hexagonal lattice (4 x 6 layout, 20 cells), K = 6",
    "mixed_domains_3x3.uai": "hand-laid 3x3 grid with domains of size 2 and 3 (reader features; brute-forceable)",
    "malformed/arity3.uai": "malformed: a factor over three variables (the reader must refuse it)",
}


def fixture_models() -> dict:
    """The models written to the generated files (same seed, same models)."""
    rng = np.random.default_rng(SEED)
    ising = ising_grid(6, 6, 2.0, rng)
    potts = grid_potts(5, 5, 3, 3.0, "attractive", rng)
    pci = pci_like(0, 6, rng, layout="hex", hex_shape=(4, 6))
    return {"ising_grid_6x6.uai": ising, "potts_grid_5x5_attractive.uai": potts, "pci_like_hex.uai": pci}


def _fmt(v) -> str:
    return " " + " ".join(f"{x:.6g}" for x in np.ravel(v))


def mixed_domains_text() -> str:
    """A 3x3 grid; K = 2 on even nodes, 3 on odd ones; node 4 has no unary; edge (0, 1) is written twice, once as
    the scope "1 0"; one potential is 0 (a forbidden pair)."""
    rng = np.random.default_rng(SEED + 1)
    n, K = 9, [2 if i % 2 == 0 else 3 for i in range(9)]
    grid_edges = [(r * 3 + c, r * 3 + c + 1) for r in range(3) for c in range(2)] + \
                 [(r * 3 + c, (r + 1) * 3 + c) for r in range(2) for c in range(3)]
    unary_nodes = [i for i in range(n) if i != 4]
    scopes = [(i,) for i in unary_nodes] + [(1, 0)] + grid_edges
    tables = []
    for sc in scopes:
        shape = [K[v] for v in sc]
        tables.append(rng.uniform(0.2, 2.0, size=shape))
    tables[len(unary_nodes) + 3][1, 0] = 0.0  # scope grid_edges[2] = (3, 4): pair (x3 = 1, x4 = 0) forbidden
    lines = ["MARKOV", str(n), " ".join(map(str, K)), str(len(scopes))]
    lines += [f"{len(sc)} " + " ".join(map(str, sc)) for sc in scopes]
    lines.append("")
    for t in tables:
        lines += [str(t.size), _fmt(t), ""]
    return "\n".join(lines)


def malformed_text() -> str:
    return "\n".join(["MARKOV", "3", "2 2 2", "1", "3 0 1 2", "", "8", " 1 2 3 4 5 6 7 8", ""])


def write_fixtures(folder: Path | None = None) -> dict:
    """Write every fixture; returns {relative name: sha256}."""
    folder = Path(folder) if folder is not None else data_dir(SLUG)
    (folder / "malformed").mkdir(parents=True, exist_ok=True)
    for name, mrf in fixture_models().items():
        write_uai(mrf, folder / name, digits=10)
    (folder / "mixed_domains_3x3.uai").write_text(mixed_domains_text(), encoding="utf-8", newline="\n")
    (folder / "malformed" / "arity3.uai").write_text(malformed_text(), encoding="utf-8", newline="\n")
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in FILES}


def main() -> None:
    folder = data_dir(SLUG)
    for name, digest in write_fixtures(folder).items():
        size = (folder / name).stat().st_size
        print(f"{SLUG}/{name}  {size} bytes  sha256 {digest}  ({FILES[name]})")


if __name__ == "__main__":
    main()
