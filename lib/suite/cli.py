"""Command line: ``python -m lib run|list|claims|profile|gallery|readme|strip``."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional

from . import gallery, registry
from ..common.paths import project_root, reports_dir
from .runner import OFFLINE_ENV, ParameterError, execute, make_specs, parse_param


def parse_seeds(text: str) -> list[int]:
    """``"0,3,5-7"`` -> ``[0, 3, 5, 6, 7]``; ranges are inclusive; seeds must be distinct integers >= 0."""
    allowed = "integers and inclusive ranges like 0,1,2 or 100-119 or 0,3,5-7"
    seeds: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        try:
            if sep:
                a, b = int(lo), int(hi)
                if b < a:
                    raise ValueError
                seeds.extend(range(a, b + 1))
            else:
                seeds.append(int(part))
        except ValueError:
            raise ParameterError(f"parameter 'seeds' got {text!r}; allowed: {allowed}") from None
    if not seeds:
        raise ParameterError(f"parameter 'seeds' is empty; allowed: {allowed}")
    if len(set(seeds)) != len(seeds):
        raise ParameterError(f"parameter 'seeds' got {text!r}; seeds must be distinct")
    return seeds


def _seeds(args) -> list[int]:
    if args.seed is not None and args.seeds is not None:
        raise ParameterError("give --seed or --seeds, not both")
    if args.seeds is not None:
        return parse_seeds(args.seeds)
    return [args.seed if args.seed is not None else 0]


def _targets(args) -> list[tuple[str, Path]]:
    if args.all and args.papers:
        raise ParameterError("give paper slugs or --all, not both")
    if args.all:
        return [(p.slug, p.notebook_path) for p in registry.papers() if p.notebook]
    if not args.papers:
        raise ParameterError("name at least one paper (see `python -m lib list`) or pass --all")
    out = []
    for name in args.papers:
        if name.endswith(".ipynb"):
            path = Path(name).resolve()
            if not path.exists():
                raise ParameterError(f"no notebook at {name}")
            out.append((path.stem, path))
            continue
        try:
            paper = registry.get(name)
        except KeyError as exc:
            raise ParameterError(str(exc.args[0])) from None
        if not paper.notebook_path.exists():
            raise ParameterError(f"{name} is planned: it has no notebook yet")
        out.append((paper.slug, paper.notebook_path))
    return out


def cmd_run(args) -> int:
    import os

    os.environ.update(OFFLINE_ENV)
    try:
        targets = _targets(args)
        params = dict(parse_param(p) for p in (args.param or []))
        # `-p mode=...` / `-p seed=...` are accepted as spellings of --mode / --seed
        if "mode" in params:
            if args.mode is not None:
                raise ParameterError("give the mode once: --mode or -p mode=..., not both")
            args.mode = params.pop("mode")
        if "seed" in params:
            if args.seed is not None or args.seeds is not None:
                raise ParameterError("give the seed once: --seed/--seeds or -p seed=..., not both")
            args.seed = params.pop("seed")
        args.mode = "quick" if args.mode is None else args.mode
        # notebooks run with notebooks/ as their working folder: make relative paths relative to the caller
        for name, value in params.items():
            if (name.endswith("_path") or name.endswith("_dir")) and isinstance(value, str) and value:
                params[name] = os.path.abspath(os.path.expanduser(value))
        seeds = _seeds(args)
        out = Path(args.out).resolve() if args.out else reports_dir()
        specs = make_specs(targets, mode=args.mode, seeds=seeds, params=params, out=out, timeout_s=args.timeout)
    except ParameterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from . import probe
    from .report import ensure_static

    speed = probe.cached() if args.executor == "local" else None  # dask workers measure their own machine
    for s in specs:
        s.speed_probe = speed
    print(f"running {len(specs)} run(s) of {len(targets)} notebook(s) in {args.mode} mode, seeds "
          f"{','.join(map(str, seeds))} -> {out}" + (f"\nmachine speed: {speed['line']}" if speed else ""), flush=True)
    ensure_static(out)
    try:
        records = execute(specs, jobs=args.jobs, executor=args.executor, scheduler=args.scheduler,
                          show_progress=not args.no_progress, allow_mixed_versions=args.allow_mixed_versions)
    except ParameterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    index, claims = gallery.build(out)
    _print_scoreboard(records, out)
    failed = [r for r in records if r["status"] != "ok"]
    print(f"\n{len(records) - len(failed)}/{len(records)} run(s) ok. Gallery: {index}  Scoreboard: "
          f"{claims.with_suffix('.html')}")
    for r in failed:
        err = r.get("error") or {}
        print(f"FAILED {r['paper']} [{r['mode']}, seed {r['seed']}]: {err.get('ename')}: "
              f"{(err.get('evalue') or '').strip()[:500]}", file=sys.stderr)
    return 1 if failed else 0


def _print_scoreboard(records: list[dict], out: Path) -> None:
    import json

    by_paper: dict[tuple, dict] = {}
    for r in records:
        key = (r["paper"], r["mode"])
        claims_path = out / r["paper"] / f"{r['mode']}-seed{r['seed']}" / "claims.json"
        try:
            claims = json.loads(claims_path.read_text())["claims"]
        except (OSError, ValueError, KeyError):
            claims = []
        table = by_paper.setdefault(key, {"runs": 0})
        table["runs"] += 1
        for c in claims:
            row = table.setdefault(c["id"], {"held": 0, "seen": 0, "expected": c["expected"],
                                             "kind": c.get("kind", "claim")})
            row["seen"] += 1
            row["held"] += bool(c["holds"])
    if not by_paper:
        return
    from ..common.claims import claim_sort_key

    print("\nClaims held per seed:")
    for (paper, mode), table in by_paper.items():
        runs = table.pop("runs")
        print(f"  {paper} ({mode}, {runs} run(s)):")
        if not table:
            print("    no claims written")
        for cid in sorted(table, key=claim_sort_key):
            row = table[cid]
            tag = "expected" if row["expected"] else "not expected in this mode"
            kind = " [sanity]" if row["kind"] == "sanity" else ""
            print(f"    {cid}{kind}: held on {row['held']}/{runs} seeds ({tag})")


def cmd_list(args) -> int:
    runs = gallery.collect_runs(reports_dir())
    for p in registry.papers():
        state = "available" if p.notebook else "planned"
        latest = runs.get(p.slug, [])
        last = f"last run: {latest[0]['status']} ({latest[0]['mode']}, seed {latest[0]['seed']})" if latest else ""
        print(f"{p.number:>2}  {p.slug:<28} {state:<10} {last}")
    return 0


def cmd_claims(args) -> int:
    out = Path(args.out).resolve() if args.out else reports_dir()
    runs = gallery.collect_runs(out)
    if not runs:
        print(f"no runs under {out}: run some with `python -m lib run ...`", file=sys.stderr)
        return 1
    print(gallery.format_record(gallery.suite_record(registry.papers(), runs), fmt=args.format))
    return 0


def cmd_profile(args) -> int:
    """Run one notebook once and print its cells by duration (like sphinx-gallery's timing tables)."""
    import os
    import tempfile

    from . import probe
    from .runner import execute

    os.environ.update(OFFLINE_ENV)
    try:
        targets = _targets(argparse.Namespace(all=False, papers=[args.paper]))
        params = dict(parse_param(p) for p in (args.param or []))
        out = Path(args.out).resolve() if args.out else Path(tempfile.mkdtemp(prefix="iclr26-profile-"))
        specs = make_specs(targets, mode=args.mode, seeds=[args.seed], params=params, out=out)
    except ParameterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    speed = probe.cached()
    specs[0].speed_probe = speed
    [record] = execute(specs, show_progress=False)
    from .runner import cell_durations

    nb = Path(record["run_dir"]) / f"{record['paper']}.ipynb"
    cells = cell_durations(nb, top=10**6)
    rows = sorted(cells["all"], key=lambda r: -r["duration_s"])
    total = cells["total_s"] or 0.0
    print(f"\n{record['paper']} [{record['mode']}, seed {record['seed']}]: {record['status']}, "
          f"{record['duration_s']:.1f} s wall-clock (kernel start and export included), {total:.1f} s in cells")
    print(f"machine speed: {speed['line']}  (runtime = {probe.ratio(record['duration_s'], speed)}x the probe)")
    print(f"{'cell':>4}  {'seconds':>8}  {'share':>6}  first line")
    for r in rows[: args.top]:
        share = 100 * r["duration_s"] / total if total else 0.0
        print(f"{r['cell']:>4}  {r['duration_s']:>8.2f}  {share:>5.1f}%  {r['first_line']}")
    print(f"run folder: {record['run_dir']}")
    return 0 if record["status"] == "ok" else 1


def cmd_manifest(args) -> int:
    from . import manifest

    try:
        changes = manifest.update(args.slug, args.provenance, replace=args.replace_provenance)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(changes) if changes else "data/README.md already lists data/%s/ as it is" % args.slug)
    return 0


def cmd_gallery(args) -> int:
    out = Path(args.out).resolve() if args.out else reports_dir()
    index, claims = gallery.build(out)
    print(f"wrote {index} and {claims}")
    return 0


def cmd_readme(args) -> int:
    path = project_root() / "README.md"
    text = path.read_text(encoding="utf-8")
    new = registry.render_readme(text)
    if args.check:
        if new != text:
            print("README.md's paper table is out of date: run `python -m lib readme`", file=sys.stderr)
            return 1
        return 0
    if new != text:
        path.write_text(new, encoding="utf-8")
        print("README.md updated")
    return 0


def cmd_strip(args) -> int:
    from .notebooks import is_stripped, strip_notebook

    paths = [Path(p) for p in args.paths] or sorted((project_root() / "notebooks").glob("*.ipynb"))
    bad = 0
    for path in paths:
        if args.check:
            if not is_stripped(path):
                print(f"{path}: has outputs or execution counts")
                bad += 1
        elif strip_notebook(path):
            print(f"stripped {path}")
    return 1 if bad else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m lib", description="iclr26-repro: run and report the notebooks")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="execute notebooks with papermill and write reports")
    run.add_argument("papers", nargs="*", metavar="SLUG", help="paper slugs (or paths to .ipynb files)")
    run.add_argument("--all", action="store_true", help="every paper that has a notebook")
    run.add_argument("--mode", default=None, help="quick (default) or full")
    run.add_argument("--seed", type=int, default=None, help="one seed (default 0)")
    run.add_argument("--seeds", default=None, help="several seeds: one run per seed; commas and inclusive ranges (0,1,2 or 100-119)")
    run.add_argument("-p", "--param", action="append", metavar="NAME=VALUE",
                     help="notebook parameter (a Python literal, else a string); repeatable")
    run.add_argument("--jobs", type=int, default=1, help="runs in parallel (default 1)")
    run.add_argument("--out", default=None, help="reports folder (default: reports/)")
    run.add_argument("--executor", default="local", choices=("local", "dask"))
    run.add_argument("--scheduler", default=None, help="dask scheduler address (default: a LocalCluster)")
    run.add_argument("--timeout", type=int, default=None, help="per-cell timeout in seconds")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--allow-mixed-versions", action="store_true",
                     help="dask: run even when workers have another project version, commit or torch than the client")
    run.set_defaults(func=cmd_run)

    cl = sub.add_parser("claims", help="the suite's reproduction record, per paper, from the runs present")
    cl.add_argument("--format", default="table", choices=("table", "markdown", "json"))
    cl.add_argument("--out", default=None, help="reports folder (default: reports/)")
    cl.set_defaults(func=cmd_claims)

    pr = sub.add_parser("profile", help="run one notebook once and print its cells by duration")
    pr.add_argument("paper", metavar="SLUG")
    pr.add_argument("--seed", type=int, default=0)
    pr.add_argument("--mode", default="quick")
    pr.add_argument("-p", "--param", action="append", metavar="NAME=VALUE")
    pr.add_argument("--top", type=int, default=15, help="cells to list (default 15)")
    pr.add_argument("--out", default=None, help="reports folder (default: a temporary folder)")
    pr.set_defaults(func=cmd_profile)

    lst = sub.add_parser("list", help="list the papers and their latest run")
    lst.set_defaults(func=cmd_list)

    mf = sub.add_parser("manifest", help="list data/<slug>/'s files in data/README.md (size, sha256, provenance)")
    mf.add_argument("slug")
    mf.add_argument("--provenance", default=None, help="the command that regenerates the files, and what they are "
                    "(for files that have no row yet)")
    mf.add_argument("--replace-provenance", action="store_true",
                    help="give every row of data/<slug>/ the --provenance text, not only the new files")
    mf.set_defaults(func=cmd_manifest)

    gal = sub.add_parser("gallery", help="rebuild reports/index.html and reports/CLAIMS.md")
    gal.add_argument("--out", default=None)
    gal.set_defaults(func=cmd_gallery)

    rd = sub.add_parser("readme", help="regenerate README's paper table from lib/papers.toml")
    rd.add_argument("--check", action="store_true", help="exit 1 if the table is out of date")
    rd.set_defaults(func=cmd_readme)

    st = sub.add_parser("strip", help="remove outputs and execution counts from notebooks")
    st.add_argument("paths", nargs="*")
    st.add_argument("--check", action="store_true", help="exit 1 if a notebook is not stripped")
    st.set_defaults(func=cmd_strip)
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)
