"""Generate the instances and reference solutions under ``data/nexco/`` (run once; a few tens of minutes).

    python -m lib.nexco.make_data                 # every data set
    python -m lib.nexco.make_data --only mis_er50_test tsp20_test

Each data set is one ``.npz`` (see :mod:`lib.nexco.instances` for the fields) and a line in ``provenance.json``
(generator, seed, sizes, reference solver and its settings, solve times, how many labels are proven optimal).

* MIS on Erdős-Rényi graphs G(n, p = 0.15): labels by OR-Tools CP-SAT (one worker, an at-most-one constraint per
  maximal clique), proven optimal.
* TSP-20: uniform points, optimal tours by CP-SAT ``AddCircuit`` (one worker, proven optimal).
* TSP-50: OR-Tools routing (path-cheapest-arc start, guided local search) stopped after a fixed number of solutions
  (deterministic; 100 for the training labels, 2000 for the test references); not proven optimal.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import platform
import time
from pathlib import Path

import numpy as np

from lib.common import data_dir

from .instances import COORD_SCALE, er_graphs, pack_adjacency, save_npz, tsp_uniform
from .solvers import mis_cpsat, tsp_cpsat, tsp_routing

SLUG = "nexco"

DATASETS = {
    # name: (kind, n, count, seed, extra)
    "mis_er50_train": ("mis", 50, 2000, 5001, {"p": 0.15}),
    "mis_er50_test": ("mis", 50, 256, 5002, {"p": 0.15}),
    "mis_er75_train": ("mis", 75, 768, 7501, {"p": 0.15}),
    "mis_er100_test": ("mis", 100, 64, 10002, {"p": 0.15}),
    "tsp20_train": ("tsp", 20, 1536, 2001, {"solver": "cpsat"}),
    "tsp20_test": ("tsp", 20, 128, 2002, {"solver": "cpsat"}),
    "tsp50_train": ("tsp", 50, 512, 5051, {"solver": "routing", "solution_limit": 100}),
    "tsp50_test": ("tsp", 50, 64, 5052, {"solver": "routing", "solution_limit": 2000}),
}


def build(name: str, count: int | None = None, verbose: bool = True) -> tuple[dict, dict]:
    """Generate data set ``name`` (optionally only its first ``count`` instances); returns (arrays, provenance)."""
    kind, n, full_count, seed, extra = DATASETS[name]
    count = full_count if count is None else int(count)
    t0 = time.perf_counter()
    times = []
    if kind == "mis":
        adjs = er_graphs(n, extra["p"], count, seed)
        labels, opt, optimal = [], [], []
        for i, a in enumerate(adjs):
            s = time.perf_counter()
            x, val, status = mis_cpsat(a, time_limit=120.0, workers=1)
            times.append(time.perf_counter() - s)
            labels.append(x)
            opt.append(val)
            optimal.append(status == "OPTIMAL")
            if verbose and (i + 1) % 200 == 0:
                print(f"  {name}: {i + 1}/{count}", flush=True)
        arrays = {"n": np.array(n), "p": np.array(extra["p"]), "adj_bits": pack_adjacency(adjs),
                  "labels": np.packbits(np.array(labels, dtype=bool), axis=1), "opt": np.array(opt, dtype=np.int16),
                  "optimal": np.array(optimal)}
        solver = "OR-Tools CP-SAT, 1 worker, clique at-most-one model, 120 s limit"
    else:
        P = tsp_uniform(n, count, seed)
        tours, optimal = [], []
        for i in range(count):
            s = time.perf_counter()
            if extra["solver"] == "cpsat":
                tour, status = tsp_cpsat(P[i], time_limit=120.0)
                optimal.append(status == "OPTIMAL")
            else:
                tour = tsp_routing(P[i], solution_limit=extra["solution_limit"])
                optimal.append(False)
            times.append(time.perf_counter() - s)
            tours.append(tour)
            if verbose and (i + 1) % 100 == 0:
                print(f"  {name}: {i + 1}/{count}", flush=True)
        tours = np.array(tours, dtype=np.int8)
        lengths = np.array([np.linalg.norm(P[i][t] - P[i][np.roll(t, -1)], axis=1).sum() for i, t in enumerate(tours)])
        arrays = {"n": np.array(n), "coords": np.rint(P * COORD_SCALE).astype(np.uint16), "tours": tours,
                  "length": lengths, "optimal": np.array(optimal)}
        solver = ("OR-Tools CP-SAT AddCircuit, 1 worker, 120 s limit, integer distances x 10^4"
                  if extra["solver"] == "cpsat" else
                  f"OR-Tools routing, PATH_CHEAPEST_ARC + GUIDED_LOCAL_SEARCH, solution_limit="
                  f"{extra['solution_limit']}, integer distances x 10^4")
    prov = {"file": f"{name}.npz", "kind": kind, "n": n, "count": count, "seed": seed,
            "generator": ("lib.nexco.instances.er_graphs(n, p, count, seed)" if kind == "mis" else
                          "lib.nexco.instances.tsp_uniform(n, count, seed) (grid 1/10^4)"),
            **extra, "reference": solver, "proven_optimal": int(np.sum(arrays["optimal"])),
            "solve_seconds_mean": round(float(np.mean(times)), 4), "solve_seconds_max": round(float(np.max(times)), 3),
            "total_seconds": round(time.perf_counter() - t0, 1)}
    return arrays, prov


def array_digest(arrays: dict) -> str:
    """sha256 over the arrays' bytes in key order (independent of the npz container)."""
    h = hashlib.sha256()
    for k in sorted(arrays):
        a = np.ascontiguousarray(arrays[k])
        h.update(k.encode())
        h.update(str(a.dtype).encode())
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def write(names, folder: Path | None = None) -> None:
    folder = Path(folder) if folder is not None else data_dir(SLUG)
    folder.mkdir(parents=True, exist_ok=True)
    prov_path = folder / "provenance.json"
    provs = json.loads(prov_path.read_text()) if prov_path.exists() else {}
    for name in names:
        print(f"{name}: generating", flush=True)
        arrays, prov = build(name)
        save_npz(folder / f"{name}.npz", **arrays)
        prov["array_sha256"] = array_digest(arrays)
        prov["ortools"] = __import__("ortools").__version__
        prov["python"] = platform.python_version()
        prov["command"] = f"python -m lib.nexco.make_data --only {name}"
        provs[name] = prov
        prov_path.write_text(json.dumps(dict(sorted(provs.items())), indent=1) + "\n", encoding="utf-8")
        print(f"{name}: {prov['count']} instances, {prov['proven_optimal']} proven optimal, "
              f"{prov['total_seconds']} s", flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=sorted(DATASETS), default=None)
    args = ap.parse_args(argv)
    write(args.only or list(DATASETS))


if __name__ == "__main__":
    main()
