"""The gallery (``reports/index.html``) and the claims scoreboard (``reports/CLAIMS.md``).

Both are rebuilt from the run folders present under the reports root (``<slug>/<mode>-seed<N>/run.json``)
and written atomically, so a reader never sees a half-written page.
"""
from __future__ import annotations

import html
import json
import os
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Optional

from .registry import Paper, papers as registry_papers


def write_text_atomic(path: Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def collect_runs(root: Path) -> dict[str, list[dict]]:
    """slug -> list of run records (run.json plus ``_dir`` and ``_claims``), newest first."""
    runs: dict[str, list[dict]] = defaultdict(list)
    for run_json in sorted(Path(root).glob("*/*/run.json")):
        try:
            record = json.loads(run_json.read_text(encoding="utf-8"))
        except ValueError:
            continue
        record["_dir"] = run_json.parent
        claims_path = run_json.parent / "claims.json"
        try:
            record["_claims"] = json.loads(claims_path.read_text(encoding="utf-8"))["claims"]
        except (OSError, ValueError, KeyError):
            record["_claims"] = []
        runs[record.get("paper", run_json.parent.parent.name)].append(record)
    for slug in runs:
        runs[slug].sort(key=lambda r: r.get("started", ""), reverse=True)
    return dict(runs)


def latest_by_seed(records: list[dict], mode: str) -> list[dict]:
    """The newest run of each seed in ``mode``."""
    seen, out = set(), []
    for r in records:
        if r.get("mode") == mode and r.get("seed") not in seen:
            seen.add(r.get("seed"))
            out.append(r)
    return sorted(out, key=lambda r: r.get("seed", 0))


def seed_scoreboard(records: list[dict], mode: str) -> list[dict]:
    """Per claim id: on how many of the latest seeds' runs it held."""
    runs = latest_by_seed(records, mode)
    table: dict[str, dict] = {}
    for r in runs:
        for c in r["_claims"]:
            row = table.setdefault(c["id"], {"id": c["id"], "statement": c["statement"], "held": 0, "runs": 0,
                                              "expected": c.get("expected", False)})
            row["runs"] += 1
            row["held"] += bool(c.get("holds"))
    return list(table.values())


def _first_figure(run_dir: Path) -> Optional[Path]:
    figs = sorted((run_dir / "figures").glob("fig*.png"), key=lambda p: (_fig_number(p.name), p.name))
    return figs[0] if figs else None


def _fig_number(name: str) -> int:
    digits = "".join(ch for ch in name[3:].split("_")[0] if ch.isdigit())
    return int(digits) if digits else 10**6


def _rel(path: Path, root: Path) -> str:
    return Path(os.path.relpath(path, root)).as_posix()


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;background:#fafafa;color:#222}
h1{margin:0 0 4px 0} .sub{color:#555;margin-bottom:18px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:16px}
.card{background:#fff;border:1px solid #ddd;border-radius:8px;padding:12px;display:flex;flex-direction:column}
.card img{width:100%;height:170px;object-fit:contain;background:#fff;border-bottom:1px solid #eee;margin-bottom:8px}
.thumb-empty{height:170px;display:flex;align-items:center;justify-content:center;color:#aaa;
  border-bottom:1px solid #eee;margin-bottom:8px}
.card h2{font-size:15px;margin:4px 0} .meta{font-size:12.5px;color:#444;margin:2px 0}
.badge{display:inline-block;padding:1px 7px;border-radius:10px;font-size:12px;font-weight:600}
.ok{background:#d9f2de;color:#17672a} .failed{background:#f8d7da;color:#8a1c25}
.planned{background:#eee;color:#777} .notrun{background:#fff3cd;color:#7a5b00}
.card.is-planned{opacity:.55;filter:grayscale(1)} .links a{margin-right:10px;font-size:13px}
.over{color:#8a1c25;font-weight:600}
"""


def _card(p: Paper, records: list[dict], root: Path) -> str:
    esc = html.escape
    links = []
    if p.url:
        links.append(f'<a href="{esc(p.url)}">paper</a>')
    if p.code:
        links.append(f'<a href="{esc(p.code)}">official code</a>')
    if not p.notebook:
        return (
            f'<div class="card is-planned"><div class="thumb-empty">planned</div>'
            f'<h2>{p.number}. {esc(p.title)}</h2><div class="meta">{esc(p.authors)}</div>'
            f'<div class="meta"><span class="badge planned">planned</span></div>'
            f'<div class="links">{"".join(links)}</div></div>'
        )
    if not records:
        return (
            f'<div class="card"><div class="thumb-empty">not run yet</div><h2>{p.number}. {esc(p.title)}</h2>'
            f'<div class="meta">{esc(p.authors)}</div><div class="meta"><span class="badge notrun">not run</span>'
            f' <code>python -m lib run {p.slug}</code></div><div class="links">{"".join(links)}</div></div>'
        )
    # the card shows the lowest seed among the newest runs of the most recent mode
    latest = latest_by_seed(records, records[0].get("mode"))[0]
    run_dir = Path(latest["_dir"])
    fig = _first_figure(run_dir)
    thumb = (f'<img src="{esc(_rel(fig, root))}" alt="first figure of {esc(p.slug)}">' if fig
             else '<div class="thumb-empty">no figure</div>')
    report = run_dir / f"{p.slug}.html"
    if report.exists():
        links.insert(0, f'<a href="{esc(_rel(report, root))}">executed report</a>')
    status = latest.get("status", "failed")
    claims = latest["_claims"]
    expected = [c for c in claims if c.get("expected")]
    held_expected = sum(bool(c.get("holds")) for c in expected)
    held_all = sum(bool(c.get("holds")) for c in claims)
    dur = float(latest.get("duration_s", 0.0))
    over = latest.get("mode") == "quick" and dur > p.quick_budget_s
    seeds_runs = latest_by_seed(records, latest.get("mode"))
    seeds_ok = sum(r.get("status") == "ok" for r in seeds_runs)
    seed_text = ", ".join(str(r.get("seed")) for r in seeds_runs)
    return (
        f'<div class="card">{thumb}<h2>{p.number}. {esc(p.title)}</h2>'
        f'<div class="meta">{esc(p.authors)}</div>'
        f'<div class="meta"><span class="badge {esc(status)}">{esc(status)}</span> '
        f'{esc(latest.get("mode", "?"))} mode, seed {esc(str(latest.get("seed")))}, '
        f'<span class="{"over" if over else ""}">{dur:.1f} s</span>'
        f'{" (over the %d s budget)" % p.quick_budget_s if over else ""}</div>'
        f'<div class="meta">claims: {held_expected}/{len(expected)} expected held; '
        f'{held_all}/{len(claims)} held in all</div>'
        f'<div class="meta">seeds {esc(seed_text)}: {seeds_ok}/{len(seeds_runs)} runs ok</div>'
        f'<div class="links">{"".join(links)}</div></div>'
    )


def render_index(all_papers: Iterable[Paper], runs: dict[str, list[dict]], root: Path) -> str:
    all_papers = list(all_papers)
    cards = "\n".join(_card(p, runs.get(p.slug, []), root) for p in all_papers)
    available = sum(p.notebook for p in all_papers)
    ok = sum(1 for p in all_papers if runs.get(p.slug) and runs[p.slug][0].get("status") == "ok")
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>iclr26-repro gallery</title><style>{CSS}</style></head><body>"
        "<h1>iclr26-repro: ICLR 2026 reproductions</h1>"
        f"<div class='sub'>{available} of {len(all_papers)} papers have a notebook; {ok} ran ok in their latest run. "
        "<a href='CLAIMS.md'>Claims scoreboard</a></div>"
        f"<div class='grid'>\n{cards}\n</div></body></html>\n"
    )


def _md(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return str(value)


def render_claims(all_papers: Iterable[Paper], runs: dict[str, list[dict]]) -> str:
    lines = ["# Claims scoreboard", "",
             "Generated by `python -m lib run` / `python -m lib gallery` from the runs under this folder.", "",
             "## Per claim, over seeds (latest run of each seed)", "",
             "| paper | mode | claim | statement | expected | held on seeds |",
             "| --- | --- | --- | --- | --- | --- |"]
    order = [p.slug for p in all_papers] + sorted(set(runs) - {p.slug for p in all_papers})
    for slug in order:
        for mode in ("quick", "full"):
            for row in seed_scoreboard(runs.get(slug, []), mode):
                lines.append(f"| {slug} | {mode} | {_md(row['id'])} | {_md(row['statement'])} | "
                             f"{'yes' if row['expected'] else 'no'} | {row['held']}/{row['runs']} |")
    lines += ["", "## Every claim of every run", "",
              "| paper | mode | seed | status | claim | paper value | measured | test | expected | holds |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for slug in order:
        for r in sorted(runs.get(slug, []), key=lambda r: (r.get("mode", ""), r.get("seed", 0))):
            if not r["_claims"]:
                lines.append(f"| {slug} | {r.get('mode')} | {r.get('seed')} | {r.get('status')} | (no claims "
                             f"written) | | | | | |")
            for c in r["_claims"]:
                lines.append(
                    f"| {slug} | {r.get('mode')} | {r.get('seed')} | {r.get('status')} | {_md(c['id'])} | "
                    f"{_md(_fmt(c.get('paper_value')))} | {_md(_fmt(c.get('measured')))} | "
                    f"{_md(c.get('comparison'))} {_md(_fmt(c.get('threshold')))} | "
                    f"{'yes' if c.get('expected') else 'no'} | {'yes' if c.get('holds') else 'NO'} |"
                )
    return "\n".join(lines) + "\n"


def build(root: Path, all_papers: Optional[Iterable[Paper]] = None) -> tuple[Path, Path]:
    """Rebuild ``index.html`` and ``CLAIMS.md`` under ``root``; returns their paths."""
    root = Path(root)
    all_papers = list(all_papers if all_papers is not None else registry_papers())
    runs = collect_runs(root)
    index, claims = root / "index.html", root / "CLAIMS.md"
    write_text_atomic(index, render_index(all_papers, runs, root))
    write_text_atomic(claims, render_claims(all_papers, runs))
    return index, claims
