"""Sets of temporally sparse graphs: the synthetic biomarker generator, summary features, the daily grid, and the
PhysioNet 2012 reader.

A data set is a :class:`Samples`: per patient a label and static covariates, and one flat table of nodes (each a
measurement: patient, marker, time, value), sorted by (patient, marker, time). One graph = one patient's
measurements of one marker; its edges go from earlier to later nodes (a causal DAG in time).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lib.common.userfiles import UserFileError, check_folder, read_lines


@dataclass
class Samples:
    markers: list            # marker names (one graph per marker and patient)
    y: np.ndarray            # [N] 0/1 labels
    static: np.ndarray       # [N, 2] static covariates (age standardised, sex 0/1)
    sample: np.ndarray       # [n] patient index of each node
    marker: np.ndarray       # [n] marker index of each node
    t: np.ndarray            # [n] time of the measurement (days for the generator, hours for PhysioNet)
    value: np.ndarray        # [n] raw measured value
    window: float            # observation window length (same unit as t)
    meta: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)  # optional per-node arrays ([n, ...]; the cascades' features, ids)

    @property
    def n(self) -> int:
        return len(self.y)

    def take(self, idx) -> "Samples":
        """The patients ``idx`` (re-indexed 0..len(idx)-1, in the given order)."""
        idx = np.asarray(idx)
        new = -np.ones(self.n, dtype=np.int64)
        new[idx] = np.arange(len(idx))
        keep = new[self.sample] >= 0
        s = new[self.sample[keep]]
        order = np.lexsort((self.t[keep], self.marker[keep], s))
        meta = {k: (v[idx] if isinstance(v, np.ndarray) and len(v) == self.n else v) for k, v in self.meta.items()}
        extra = {k: np.asarray(v)[keep][order] for k, v in self.extra.items()}
        return Samples(self.markers, self.y[idx], self.static[idx], s[order], self.marker[keep][order],
                       self.t[keep][order], self.value[keep][order], self.window, meta, extra)


def _sorted(markers, y, static, sample, marker, t, value, window, meta) -> Samples:
    order = np.lexsort((t, marker, sample))
    return Samples(list(markers), np.asarray(y, dtype=np.int64), np.asarray(static, dtype=float),
                   np.asarray(sample, dtype=np.int64)[order], np.asarray(marker, dtype=np.int64)[order],
                   np.asarray(t, dtype=float)[order], np.asarray(value, dtype=float)[order], float(window), meta)


def make_biomarker_sets(n: int, n_markers: int = 6, *, window: float = 365.0, tau: float = 60.0,
                        interaction: bool = True, rng: np.random.Generator, pos_rate: float = 0.3,
                        rate_range=(6.0, 14.0), extra_rate: float = 2.0, drift_range=(0.5, 2.0),
                        baseline_sd: float = 0.5, ou_sd: float = 0.5, ou_days: float = 45.0,
                        noise_sd: float = 0.3, xor_weight: float = 2.0, age_weight: float = 0.4) -> Samples:
    """``n`` synthetic patients with ``n_markers`` irregularly sampled biomarkers (named A, B, C, ...).

    Marker g of patient p is tested at Poisson times over ``[0, window]`` (rate ``rate_range`` per window, spread
    evenly over markers, A at the middle), its values an Ornstein-Uhlenbeck path (stationary sd ``ou_sd``, time scale
    ``ou_days``) around a patient baseline ``b_pg ~ N(0, baseline_sd^2)``, plus measurement noise. The label:
    ``s = xor_weight * [sign b_B != sign b_C] + age_weight * age + N(0, 1)``, thresholded at its ``1 - pos_rate``
    quantile (``interaction=False`` drops the XOR term). Positives then get (1) marker A drifting up linearly inside
    the critical window ``[window - tau, window]`` by ``U(drift_range)`` (in units of the marker's sd) and (2)
    ``extra_rate`` extra tests of A inside the window (informative sampling). Ground truth in ``meta``.
    """
    m = int(n_markers)
    if m < 3:
        raise ValueError("make_biomarker_sets: n_markers must be >= 3 (A, B and C carry the signal)")
    names = [chr(ord("A") + k) for k in range(m)]
    age = rng.normal(size=n)
    sex = (rng.random(n) < 0.5).astype(float)
    base = rng.normal(0.0, baseline_sd, size=(n, m))
    xor = (np.sign(base[:, 1]) != np.sign(base[:, 2])).astype(float)
    score = (xor_weight * xor if interaction else 0.0) + age_weight * age + rng.normal(size=n)
    y = (score > np.quantile(score, 1 - pos_rate)).astype(np.int64)
    rates = np.linspace(rate_range[0], rate_range[1], m)
    rates = np.roll(rates, -(m // 2))  # A gets the middle rate
    counts = rng.poisson(rates[None, :], size=(n, m))
    extra = rng.poisson(extra_rate, size=(n, m)) * y[:, None] * (np.arange(m) == 0)[None, :]
    counts = np.maximum(counts, 1)
    sample, marker, t = [], [], []
    for kind, cnt, lo in (("base", counts, 0.0), ("extra", extra, window - tau)):
        tot = cnt.sum()
        sample.append(np.repeat(np.repeat(np.arange(n), m), cnt.ravel()))
        marker.append(np.repeat(np.tile(np.arange(m), n), cnt.ravel()))
        t.append(rng.uniform(lo, window, size=tot))
    sample, marker, t = np.concatenate(sample), np.concatenate(marker), np.concatenate(t)
    order = np.lexsort((t, marker, sample))
    sample, marker, t = sample[order], marker[order], t[order]
    # OU path sampled exactly at the (sorted) times of each graph
    gid = sample * m + marker
    first = np.r_[True, gid[1:] != gid[:-1]]
    dt = np.r_[0.0, np.diff(t)]
    a = np.exp(-dt / ou_days)
    eps = rng.normal(size=len(t))
    dev = np.empty(len(t))
    for k in range(len(t)):  # a linear recursion per node (a few thousand numbers): cheap
        dev[k] = ou_sd * eps[k] if first[k] else a[k] * dev[k - 1] + ou_sd * np.sqrt(1 - a[k] ** 2) * eps[k]
    drift_amp = rng.uniform(*drift_range, size=n) * y
    ramp = np.clip((t - (window - tau)) / tau, 0.0, 1.0) * (marker == 0)
    sd_total = np.sqrt(baseline_sd ** 2 + ou_sd ** 2)
    value = base[sample, marker] + dev + drift_amp[sample] * ramp * sd_total + rng.normal(0, noise_sd, len(t))
    relevance = np.zeros(m)
    relevance[0] = 1.0
    if interaction:
        relevance[1:3] = 1.0
    meta = {"tau": tau, "interaction": bool(interaction), "relevance": relevance, "xor": xor, "drift": drift_amp,
            "age": age, "rates": rates}
    static = np.c_[age, sex]
    return _sorted(names, y, static, sample, marker, t, value, window, meta)


def train_val_test(n: int, fractions=(4, 1, 1), *, rng: np.random.Generator):
    perm = rng.permutation(n)
    f = np.asarray(fractions, dtype=float) / np.sum(fractions)
    a, b = int(round(f[0] * n)), int(round((f[0] + f[1]) * n))
    return perm[:a], perm[a:b], perm[b:]


# --- baselines' inputs ----------------------------------------------------------------------------------------
SUMMARY_STATS = ("last", "mean", "min", "max", "count", "slope")


def summary_features(s: Samples) -> np.ndarray:
    """Per patient and marker: last, mean, min, max, count and least-squares slope (per unit time) of the values,
    NaN where a marker has no (or, for the slope, one) measurement; then the static covariates.
    Shape ``[N, 6 * m + n_static]``, marker-major (marker 0's six, marker 1's six, ...)."""
    m = len(s.markers)
    G = s.n * m
    gid = s.sample * m + s.marker
    cnt = np.bincount(gid, minlength=G).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(gid, s.value, G) / cnt
        tm = np.bincount(gid, s.t, G) / cnt
        dv, dtt = s.value - mean[gid], s.t - tm[gid]
        sxy, sxx = np.bincount(gid, dv * dtt, G), np.bincount(gid, dtt * dtt, G)
        slope = np.where((cnt > 1) & (sxx > 0), sxy / sxx, np.nan)
    mn = np.full(G, np.inf)
    mx = np.full(G, -np.inf)
    np.minimum.at(mn, gid, s.value)
    np.maximum.at(mx, gid, s.value)
    last = np.full(G, np.nan)
    last[gid] = s.value  # nodes are sorted by time within a graph: the last write wins
    empty = cnt == 0
    mean[empty] = np.nan
    mn[empty] = np.nan
    mx[empty] = np.nan
    feats = np.stack([last, mean, mn, mx, cnt, slope], axis=1).reshape(s.n, m * 6)
    return np.concatenate([feats, s.static], axis=1)


def to_grid(s: Samples, n_steps: int, step: float = 1.0):
    """A regular grid of ``n_steps`` cells of width ``step`` (cell k covers ``[k step, (k+1) step)``): values
    carried forward from the last observation (0 before the first; the cell's last observation when it has one),
    masks (1 where the cell holds an observation) and Δt (time since the last observation, at cell ends, GRU-D's
    δ; 0 before any). Shapes ``[N, n_steps, m]``."""
    m = len(s.markers)
    cell = np.clip((s.t // step).astype(np.int64), 0, n_steps - 1)
    vals = np.full((s.n, n_steps, m), np.nan)
    last_t = np.full((s.n, n_steps, m), np.nan)
    vals[s.sample, cell, s.marker] = s.value  # sorted by time: the cell's last observation wins
    last_t[s.sample, cell, s.marker] = s.t
    mask = (~np.isnan(vals)).astype(float)
    # forward fill along time
    idx = np.where(mask > 0, np.arange(n_steps)[None, :, None], 0)
    np.maximum.accumulate(idx, axis=1, out=idx)
    seen = np.maximum.accumulate(mask, axis=1) > 0
    ii, _, kk = np.meshgrid(np.arange(s.n), np.arange(n_steps), np.arange(m), indexing="ij")
    ffill = np.where(seen, vals[ii, idx, kk], 0.0)
    tl = last_t[ii, idx, kk]
    ends = (np.arange(n_steps) + 1.0)[None, :, None] * step
    delta = np.where(seen, ends - tl, 0.0)
    return np.nan_to_num(ffill), mask, delta


# --- synthetic cascades (the fake-news task) ------------------------------------------------------------------
CASCADE_EMB = 16


def make_cascades(n: int, *, rng: np.random.Generator, max_nodes: int = 40, emb_shift: float = 0.03,
                  fake_root=(3.0, 5.0), child_rate=((0.7, 1.1), (0.4, 0.8)), delay_hours=(1.0, 2.5)) -> Samples:
    """``n`` retweet cascades (half "fake", ``y = 1``), each a random tree grown by a branching process (networkx)
    and observed up to its first ``max_nodes`` retweets.

    Fake cascades: fewer direct retweets of the root (1 + Poisson(3) against 1 + Poisson(5)), more re-retweets
    (each node's offspring Poisson(λ), λ ~ U(0.7, 1.1) against U(0.4, 0.8): deeper trees) and shorter delays
    (exponential, per-cascade mean lognormal around 1 h against 2.5 h). Node features ``extra["x"]``: a 16-dim
    Gaussian user embedding with a class-dependent mean shift of ``emb_shift`` per coordinate, the standardised
    log follower count, and the time since the post / 24 h. Graphs: ``root`` (the source alone) and ``rest``.
    ``extra``: ``node_id`` (order of birth, root 0) and ``parent_id`` (-1 for the root) for the GIN's edges;
    ``meta``: per-cascade depth and size."""
    import networkx as nx

    y = (rng.random(n) < 0.5).astype(np.int64)
    cols = {k: [] for k in ("sample", "marker", "t", "value", "node_id", "parent_id")}
    depth, size = np.zeros(n, np.int64), np.zeros(n, np.int64)
    for i in range(n):
        fake = int(y[i])
        lam = rng.uniform(*child_rate[1 - fake])
        mean_delay = rng.lognormal(np.log(delay_hours[1 - fake]), 0.5)
        tree = nx.DiGraph()
        tree.add_node(0, t=0.0)
        frontier, nxt = [0], 1
        while frontier and nxt < 4 * max_nodes:
            new = []
            for u in frontier:
                k = 1 + rng.poisson(fake_root[1 - fake]) if u == 0 else rng.poisson(lam)
                for _ in range(int(k)):
                    tree.add_node(nxt, t=tree.nodes[u]["t"] + rng.exponential(mean_delay))
                    tree.add_edge(u, nxt)
                    new.append(nxt)
                    nxt += 1
            frontier = new
        keep = sorted(tree.nodes, key=lambda v: tree.nodes[v]["t"])[:max_nodes]  # parents precede children
        sub = tree.subgraph(keep)
        depth[i] = max(nx.shortest_path_length(sub, 0).values())
        size[i] = len(keep)
        for v in keep:
            cols["sample"].append(i)
            cols["marker"].append(0 if v == 0 else 1)
            cols["t"].append(sub.nodes[v]["t"])
            cols["node_id"].append(v)
            cols["parent_id"].append(next(iter(sub.predecessors(v)), -1))
    c = {k: np.asarray(v) for k, v in cols.items()}
    cnt = len(c["t"])
    direction = np.ones(CASCADE_EMB)
    emb = rng.normal(size=(cnt, CASCADE_EMB)) + emb_shift * (2 * y[c["sample"]] - 1)[:, None] * direction
    followers = (rng.normal(5.0, 1.5, cnt) - 5.0) / 1.5  # log follower count, standardised
    x = np.c_[emb, followers, c["t"] / 24.0].astype(np.float32)
    order = np.lexsort((c["t"], c["marker"], c["sample"]))
    extra = {"x": x[order], "node_id": c["node_id"][order], "parent_id": c["parent_id"][order]}
    return Samples(["root", "rest"], y, np.zeros((n, 2)), c["sample"][order], c["marker"][order], c["t"][order],
                   followers[order], float(np.max(c["t"])) if cnt else 1.0,
                   {"depth": depth, "size": size}, extra)


def cascade_edges(s: Samples) -> np.ndarray:
    """The cascades' tree edges as global node index pairs ``[2, n_edges]`` (child, parent) of ``s``'s node table."""
    width = int(s.extra["node_id"].max()) + 1 if len(s.t) else 1
    own = s.sample * width + s.extra["node_id"]
    order = np.argsort(own)
    child = np.flatnonzero(s.extra["parent_id"] >= 0)
    want = s.sample[child] * width + s.extra["parent_id"][child]
    pos = np.searchsorted(own[order], want)
    if np.any(own[order][np.minimum(pos, len(own) - 1)] != want):
        raise ValueError("cascade_edges: a node's parent is missing from the samples")
    return np.stack([child, order[pos]])


# --- PhysioNet 2012 (set-a) -----------------------------------------------------------------------------------
PHYSIONET_EXPECTED = ("PhysioNet 2012 as distributed: a folder holding Outcomes-a.txt (a headed CSV with RecordID and "
                      "In-hospital_death) and a set-a/ folder of per-record <RecordID>.txt files, each a CSV with "
                      "the header 'Time,Parameter,Value' and rows like '00:07,HR,73' (time as HH:MM since "
                      "admission)")
STATIC_PARAMS = ("RecordID", "Age", "Gender", "Height", "ICUType", "Weight")
TIME_SERIES_PARAMS = ("Albumin", "ALP", "ALT", "AST", "Bilirubin", "BUN", "Cholesterol", "Creatinine", "DiasABP",
                      "FiO2", "GCS", "Glucose", "HCO3", "HCT", "HR", "K", "Lactate", "Mg", "MAP", "MechVent", "Na",
                      "NIDiasABP", "NIMAP", "NISysABP", "PaCO2", "PaO2", "pH", "Platelets", "RespRate", "SaO2",
                      "SysABP", "Temp", "TroponinI", "TroponinT", "Urine", "WBC", "Weight")
KNOWN_PARAMS = frozenset(STATIC_PARAMS + TIME_SERIES_PARAMS)


def _hhmm(token: str):
    hh, sep, mm = token.partition(":")
    if not sep or not hh.isdigit() or not mm.isdigit() or len(mm) != 2 or int(mm) > 59:
        return None
    return int(hh) * 60 + int(mm)


def read_physionet_record(path, parameter: str = "data_path"):
    """One record file: ``(static dict, list of (minutes, parameter, value))``."""
    lines = read_lines(parameter, path, expected=PHYSIONET_EXPECTED)
    head = [f.strip() for f in lines[0][1].split(",")]
    if head != ["Time", "Parameter", "Value"]:
        raise UserFileError(parameter, path, f"the header is {lines[0][1][:60]!r}, not 'Time,Parameter,Value'",
                            expected=PHYSIONET_EXPECTED, line=lines[0][0])
    static, rows = {}, []
    for lineno, line in lines[1:]:
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != 3:
            raise UserFileError(parameter, path, f"the line has {len(fields)} comma-separated fields, not 3",
                                expected=PHYSIONET_EXPECTED, line=lineno)
        tmin = _hhmm(fields[0])
        if tmin is None:
            raise UserFileError(parameter, path, f"the time {fields[0][:20]!r} is not HH:MM", expected=PHYSIONET_EXPECTED,
                                line=lineno)
        if fields[1] not in KNOWN_PARAMS:
            raise UserFileError(parameter, path, f"the parameter name {fields[1][:20]!r} is not one of PhysioNet "
                                f"2012's 42 names (HR, Na, Glucose, ...)",
                                expected=PHYSIONET_EXPECTED, line=lineno)
        try:
            v = float(fields[2])
        except ValueError:
            raise UserFileError(parameter, path, f"the value {fields[2][:20]!r} is not a number",
                                expected=PHYSIONET_EXPECTED, line=lineno) from None
        if not np.isfinite(v):
            raise UserFileError(parameter, path, f"the value {fields[2]!r} is not finite", expected=PHYSIONET_EXPECTED,
                                line=lineno)
        if tmin == 0 and fields[1] in STATIC_PARAMS:
            static[fields[1]] = v
        else:
            rows.append((tmin, fields[1], v))
    if "RecordID" not in static:
        raise UserFileError(parameter, path, "no RecordID line at time 00:00", expected=PHYSIONET_EXPECTED)
    return static, rows


def load_physionet2012(path, parameter: str = "data_path", markers=None) -> Samples:
    """Read a PhysioNet 2012 folder into :class:`Samples` (time in hours over the 48 h window; one graph per
    time-varying parameter, in ``markers`` or all parameters seen, sorted; label In-hospital_death; static
    covariates age (standardised over the records) and gender). ``-1`` (PhysioNet's missing marker) values are
    dropped."""
    folder = check_folder(parameter, path, expected=PHYSIONET_EXPECTED, must_contain=("Outcomes-a.txt", "set-a"))
    from lib.common.userfiles import read_csv_frame

    out = read_csv_frame(parameter, folder / "Outcomes-a.txt", expected=PHYSIONET_EXPECTED,
                         required=("RecordID", "In-hospital_death"), delimiter=",")
    labels = {int(r): int(d) for r, d in zip(out["RecordID"], out["In-hospital_death"])}
    bad = [d for d in labels.values() if d not in (0, 1)]
    if bad:
        raise UserFileError(parameter, folder / "Outcomes-a.txt", f"In-hospital_death holds {bad[0]}, not 0 or 1",
                            expected=PHYSIONET_EXPECTED)
    files = sorted((folder / "set-a").glob("*.txt"))
    if not files:
        raise UserFileError(parameter, folder / "set-a", "the folder holds no record .txt files",
                            expected=PHYSIONET_EXPECTED)
    records = []
    for f in files:
        static, rows = read_physionet_record(f, parameter)
        rid = int(static["RecordID"])
        if rid not in labels:
            raise UserFileError(parameter, f, f"RecordID {rid} is not in Outcomes-a.txt", expected=PHYSIONET_EXPECTED)
        records.append((rid, static, rows))
    names = sorted({p for _, _, rows in records for _, p, _ in rows}) if markers is None else list(markers)
    col = {p: k for k, p in enumerate(names)}
    sample, marker, t, value = [], [], [], []
    for i, (_, _, rows) in enumerate(records):
        for tmin, p, v in rows:
            if p in col and v != -1:
                sample.append(i)
                marker.append(col[p])
                t.append(tmin / 60.0)
                value.append(v)
    age = np.array([r[1].get("Age", np.nan) for r in records], dtype=float)
    age = np.where(age < 0, np.nan, age)
    age = (age - np.nanmean(age)) / (np.nanstd(age) + 1e-9) if np.isfinite(age).any() else np.zeros(len(age))
    sex = np.array([r[1].get("Gender", -1) for r in records], dtype=float)
    static = np.c_[np.nan_to_num(age), np.where(sex == 1, 1.0, 0.0)]
    y = [labels[r[0]] for r in records]
    meta = {"record_ids": np.array([r[0] for r in records]), "source": str(folder)}
    return _sorted(names, y, static, sample, marker, t, value, 48.0, meta)


def check_physionet(path):
    """The loader the suite and the runner call on a user's ``data_path``."""
    return load_physionet2012(path, parameter="data_path")
