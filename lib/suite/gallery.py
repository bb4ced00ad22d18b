"""The gallery (``index.html``), the claims scoreboard (``CLAIMS.html`` and ``CLAIMS.md``) and the suite's record.

Everything is rebuilt from the run folders present under the reports root (``<slug>/<mode>-seed<N>/run.json``,
plus ``<mode>-seed<N>.failed/`` where a failed rerun kept an earlier good run) and written atomically.

The record counts **paper claims** and **sanity checks** apart (``kind`` in ``claims.json``):

- a paper claim *held in quick mode* when it held on every seed of the latest quick runs;
- it *held in full mode* when it held in every latest full-mode run (``full not run`` when there is none);
- it is *not reproduced* when it held in neither;
- a sanity check *passed* when it held in every latest run that checked it.
"""
from __future__ import annotations

import datetime as _dt
import html
import json
import os
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from ..common.claims import claim_sort_key
from .registry import Paper, papers as registry_papers

THUMBNAIL = "thumbnail.png"
REASON_ANCHOR = "Differences-from-the-paper"


def write_text_atomic(path: Path, text: str) -> None:
    """Write so that a reader never sees a half-written file; the file is world-readable (0644)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# --- reading run folders ------------------------------------------------------------------------------------------
def _read_run(run_json: Path) -> Optional[dict]:
    try:
        record = json.loads(run_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    record["_dir"] = run_json.parent
    try:
        record["_claims"] = json.loads((run_json.parent / "claims.json").read_text(encoding="utf-8"))["claims"]
    except (OSError, ValueError, KeyError, TypeError):
        record["_claims"] = []
    for c in record["_claims"]:
        c.setdefault("kind", "claim")
    record["_failed_attempt"] = run_json.parent.name.endswith(".failed")
    return record


def collect_runs(root: Path) -> dict[str, list[dict]]:
    """slug -> run records (run.json plus ``_dir``, ``_claims``, ``_failed_attempt``, ``_stale``), newest first.

    A ``<mode>-seed<N>.failed`` attempt is listed beside the good run it did not replace; that good run gets
    ``_stale`` (the newest attempt of that mode and seed failed) and ``_failure`` (the failed attempt's record).
    """
    runs: dict[str, list[dict]] = defaultdict(list)
    root = Path(root)
    for run_json in sorted(root.glob("*/*/run.json")):
        if run_json.parent.name.startswith(".") or run_json.parent.parent.name.startswith(("_", ".")):
            continue
        record = _read_run(run_json)
        if record is None:
            continue
        runs[record.get("paper", run_json.parent.parent.name)].append(record)
    for slug, records in runs.items():
        failures = {(r.get("mode"), r.get("seed")): r for r in records if r["_failed_attempt"]}
        for r in records:
            r["_stale"] = False
            f = failures.get((r.get("mode"), r.get("seed")))
            if not r["_failed_attempt"] and f is not None and f.get("started", "") >= r.get("started", ""):
                r["_stale"], r["_failure"] = True, f
        records.sort(key=lambda r: r.get("started", ""), reverse=True)
    return dict(runs)


def latest_by_seed(records: list[dict], mode: str) -> list[dict]:
    """The newest published run of each seed in ``mode`` (failed attempts beside a kept good run excluded)."""
    seen, out = set(), []
    for r in records:
        if r.get("mode") == mode and not r.get("_failed_attempt") and r.get("seed") not in seen:
            seen.add(r.get("seed"))
            out.append(r)
    return sorted(out, key=lambda r: r.get("seed", 0))


# --- the record ---------------------------------------------------------------------------------------------------
@dataclass
class ClaimRow:
    id: str
    kind: str
    statement: str
    paper_value: object = None
    comparison: str = ""
    threshold: object = None
    measured: dict = field(default_factory=dict)  # (mode, seed) -> measured
    holds: dict = field(default_factory=dict)  # (mode, seed) -> bool
    expected: dict = field(default_factory=dict)  # mode -> bool

    def held_all(self, mode: str) -> Optional[bool]:
        vals = [h for (m, _), h in self.holds.items() if m == mode]
        return all(vals) if vals else None

    def held_count(self, mode: str) -> tuple[int, int]:
        vals = [h for (m, _), h in self.holds.items() if m == mode]
        return sum(vals), len(vals)


@dataclass
class PaperRecord:
    paper: Paper
    runs: dict  # mode -> latest runs by seed
    rows: list  # ClaimRow, ordered by id

    @property
    def claims(self) -> list:
        return [r for r in self.rows if r.kind != "sanity"]

    @property
    def sanity(self) -> list:
        return [r for r in self.rows if r.kind == "sanity"]

    def counts(self) -> dict:
        claims = self.claims
        quick = [r.held_all("quick") for r in claims]
        full = [r.held_all("full") for r in claims]
        has_quick, has_full = bool(self.runs.get("quick")), bool(self.runs.get("full"))
        sanity_ok = []
        for r in self.sanity:
            vals = list(r.holds.values())
            sanity_ok.append(bool(vals) and all(vals))
        return {
            "paper": self.paper.slug,
            "claims": len(claims),
            "held_quick": sum(bool(q) for q in quick) if has_quick else None,
            "expected_quick": sum(bool(r.expected.get("quick")) for r in claims) if has_quick else None,
            "held_full": sum(bool(f) for f in full) if has_full else None,
            "not_reproduced": sum(not (bool(q) or bool(f)) for q, f in zip(quick, full)),
            "sanity": len(sanity_ok),
            "sanity_passed": sum(sanity_ok),
            "quick_seeds": [r.get("seed") for r in self.runs.get("quick", [])],
            "full_seeds": [r.get("seed") for r in self.runs.get("full", [])],
        }


def paper_record(p: Paper, records: list[dict]) -> PaperRecord:
    runs = {m: latest_by_seed(records, m) for m in ("quick", "full")}
    rows: dict[str, ClaimRow] = {}
    for mode in ("full", "quick"):  # quick last: its statement/threshold text wins where both exist
        for r in runs[mode]:
            for c in r["_claims"]:
                row = rows.get(c["id"])
                if row is None:
                    row = rows[c["id"]] = ClaimRow(id=c["id"], kind=c.get("kind", "claim"), statement=c["statement"])
                row.kind = c.get("kind", row.kind)
                row.statement, row.paper_value = c["statement"], c.get("paper_value")
                row.comparison, row.threshold = c.get("comparison", ""), c.get("threshold")
                row.measured[(mode, r.get("seed"))] = c.get("measured")
                row.holds[(mode, r.get("seed"))] = bool(c.get("holds"))
                row.expected[mode] = bool(c.get("expected"))
    ordered = sorted(rows.values(), key=lambda r: claim_sort_key(r.id))
    return PaperRecord(paper=p, runs=runs, rows=ordered)


def _stub(slug: str, number: int) -> Paper:
    """A stand-in registry entry for runs of a notebook that is not in the registry (a fixture, a user's own)."""
    return Paper(number=number, slug=slug, title=slug, authors="", venue="", arxiv="", openreview="", code="",
                 brief="", notebook=True, quick_budget_s=60)


def with_unregistered(all_papers: Iterable[Paper], runs: dict[str, list[dict]]) -> list[Paper]:
    all_papers = list(all_papers)
    known = {p.slug for p in all_papers}
    extra = sorted(set(runs) - known)
    return all_papers + [_stub(s, 1000 + i) for i, s in enumerate(extra)]


def suite_record(all_papers: Iterable[Paper], runs: dict[str, list[dict]]) -> dict:
    """The suite's reproduction record: totals over papers, and one row per paper that has runs (runs of
    notebooks outside the registry included)."""
    registered = list(all_papers)
    all_papers = with_unregistered(registered, runs)
    rows = [paper_record(p, runs.get(p.slug, [])).counts() for p in all_papers if runs.get(p.slug)]
    tot = {
        "papers": len(registered),
        "with_notebook": sum(p.notebook for p in registered),
        "with_runs": len(rows),
        "claims": sum(r["claims"] for r in rows),
        "held_quick": sum(r["held_quick"] or 0 for r in rows),
        "claims_run_quick": sum(r["claims"] for r in rows if r["held_quick"] is not None),
        "held_full": sum(r["held_full"] or 0 for r in rows),
        "claims_run_full": sum(r["claims"] for r in rows if r["held_full"] is not None),
        "papers_full": sum(r["held_full"] is not None for r in rows),
        "not_reproduced": sum(r["not_reproduced"] for r in rows),
        "sanity": sum(r["sanity"] for r in rows),
        "sanity_passed": sum(r["sanity_passed"] for r in rows),
    }
    return {"totals": tot, "papers": rows}


# --- formatting helpers -------------------------------------------------------------------------------------------
def _fmt(value) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return str(value)


def _rel(path: Path, root: Path) -> str:
    return Path(os.path.relpath(path, root)).as_posix()


def _fig_number(name: str) -> int:
    digits = "".join(ch for ch in name[3:].split("_")[0] if ch.isdigit())
    return int(digits) if digits else 10**6


def _thumbnail(run_dir: Path) -> Optional[Path]:
    chosen = run_dir / "figures" / THUMBNAIL
    if chosen.exists():
        return chosen
    figs = sorted((run_dir / "figures").glob("fig*.png"), key=lambda p: (_fig_number(p.name), p.name))
    return figs[0] if figs else None


def _authors(p: Paper) -> str:
    a = p.authors or ""
    if "not public" in a or a.lower().startswith("anonymous"):
        return "authors: see the paper's page"
    return a


def _date(record: dict) -> str:
    started = record.get("started") or ""
    return started[:16].replace("T", " ") if started else ""


def _ratio(record: dict) -> Optional[float]:
    from .probe import ratio

    return ratio(record.get("duration_s", 0.0), record.get("speed_probe"))


def _count_text(k: Optional[int], n: int) -> str:
    return "not run" if k is None else f"{k}/{n}"


CSS = """
:root{--ink:#1d2433;--muted:#5b6476;--line:#e3e6ec;--bg:#f6f7f9;--ok:#17672a;--okbg:#dcf3e1;--bad:#8a1c25;
--badbg:#f9dde0;--warn:#7a5b00;--warnbg:#fff1c7;--info:#1d4f91;--infobg:#e5edfb}
*{box-sizing:border-box} body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;
background:var(--bg);color:var(--ink);line-height:1.4}
header.top{background:#1f2a44;color:#fff;padding:22px 28px 18px} header.top h1{margin:0 0 6px;font-size:24px}
header.top .sub{color:#c9d3e8;font-size:14px} header.top a{color:#cfe0ff}
main{padding:18px 28px 40px;max-width:1500px;margin:0 auto}
.record{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0 10px}
.stat{background:#fff;border:1px solid var(--line);border-radius:10px;padding:10px 14px;min-width:150px}
.stat b{display:block;font-size:22px} .stat span{color:var(--muted);font-size:12.5px}
.legend{font-size:13px;color:var(--muted);margin:6px 0 16px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:16px}
.card{background:#fff;border:1px solid var(--line);border-radius:10px;padding:12px 14px;display:flex;
flex-direction:column;gap:6px}
.card .thumb{height:210px;display:flex;align-items:center;justify-content:center;background:#fff;
border-bottom:1px solid var(--line);margin:-2px -4px 4px}
.card .thumb img{max-width:100%;max-height:206px;object-fit:contain}
.card .thumb.empty{color:#9aa3b5;font-size:13px}
.card h2{font-size:15px;margin:2px 0;line-height:1.3} .card h2 a{color:var(--ink);text-decoration:none}
.meta{font-size:12.5px;color:var(--muted)} .links a{margin-right:12px;font-size:13px}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;margin:1px 4px 1px 0;
white-space:nowrap}
.ok{background:var(--okbg);color:var(--ok)} .failed{background:var(--badbg);color:var(--bad)}
.stale,.warn{background:var(--warnbg);color:var(--warn)} .info{background:var(--infobg);color:var(--info)}
.none{background:#eceef2;color:#5b6476}
table.status,table.claims{border-collapse:collapse;width:100%;background:#fff;font-size:13px;margin:8px 0 22px}
table.status th,table.status td,table.claims th,table.claims td{border-bottom:1px solid var(--line);padding:5px 8px;
text-align:left;vertical-align:top}
table.status th,table.claims th{background:#eef1f5;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.planned{font-size:13px;columns:2 420px;padding-left:18px} .planned li{margin:2px 0}
h2.section{font-size:18px;margin:26px 0 6px}
.over{color:var(--bad);font-weight:600}
"""


def _badge(text: str, cls: str, title: str = "") -> str:
    t = f' title="{html.escape(title)}"' if title else ""
    return f'<span class="badge {cls}"{t}>{html.escape(text)}</span>'


def _claim_badges(c: dict) -> str:
    n = c["claims"]
    parts = []
    if c["held_quick"] is not None:
        cls = "ok" if c["held_quick"] == n else ("warn" if c["held_quick"] else "failed")
        parts.append(_badge(f"claims held {c['held_quick']}/{n} quick", cls,
                            "paper claims that held on every seed of the latest quick-mode runs"))
    else:
        parts.append(_badge("quick not run", "none"))
    if c["held_full"] is not None:
        cls = "ok" if c["held_full"] == n else ("warn" if c["held_full"] else "failed")
        parts.append(_badge(f"full {c['held_full']}/{n}", cls, "paper claims that held in the latest full-mode runs"))
    else:
        parts.append(_badge("full not run", "none", "no full-mode run under this reports folder"))
    if c["sanity"]:
        cls = "info" if c["sanity_passed"] == c["sanity"] else "failed"
        parts.append(_badge(f"sanity {c['sanity_passed']}/{c['sanity']}", cls,
                            "checks of the implementation that hold by construction; not counted as claims"))
    return "".join(parts)


def _show_run(rec: PaperRecord) -> Optional[dict]:
    for mode in ("quick", "full"):
        if rec.runs.get(mode):
            return rec.runs[mode][0]
    return None


def _card(rec: PaperRecord, root: Path) -> str:
    p, esc = rec.paper, html.escape
    links = []
    run = _show_run(rec)
    if run is not None:
        report = Path(run["_dir"]) / f"{p.slug}.html"
        if report.exists():
            links.append(f'<a href="{esc(_rel(report, root))}">executed report</a>')
    links.append(f'<a href="CLAIMS.html#{esc(p.slug)}">claims</a>')
    if p.url:
        links.append(f'<a href="{esc(p.url)}">paper</a>')
    if p.code:
        links.append(f'<a href="{esc(p.code)}">official code</a>')
    if run is None:
        return (f'<div class="card" id="{esc(p.slug)}"><div class="thumb empty">not run yet: '
                f'<code>python -m lib run {esc(p.slug)}</code></div><h2>{p.number}. {esc(p.title)}</h2>'
                f'<div class="meta">{esc(_authors(p))}</div><div>{_badge("not run", "none")}</div>'
                f'<div class="links">{"".join(links)}</div></div>')
    fig = _thumbnail(Path(run["_dir"]))
    thumb = (f'<div class="thumb"><img src="{esc(_rel(fig, root))}" alt="{esc(p.slug)}: key figure" loading="lazy">'
             f'</div>' if fig else '<div class="thumb empty">no figure</div>')
    status = run.get("status", "failed")
    badges = [_badge(status, "ok" if status == "ok" else "failed")]
    if run.get("_stale"):
        f = run["_failure"]
        badges.append(_badge("stale", "stale", f"the newest run ({_date(f)}) failed; this is the last good run"))
    counts = rec.counts()
    dur = float(run.get("duration_s") or 0.0)
    over = run.get("mode") == "quick" and dur > p.quick_budget_s
    ratio = _ratio(run)
    seeds = counts["quick_seeds"] if run.get("mode") == "quick" else counts["full_seeds"]
    timing = (f'<span class="{"over" if over else ""}">{dur:.0f} s</span>'
              + (f" ({ratio:g}× probe)" if ratio else "") + (f" over the {p.quick_budget_s} s budget" if over else ""))
    return (
        f'<div class="card" id="{esc(p.slug)}">{thumb}<h2>{p.number}. {esc(p.title)}</h2>'
        f'<div class="meta">{esc(_authors(p))}</div>'
        f'<div>{"".join(badges)}{_claim_badges(counts)}</div>'
        f'<div class="meta">{esc(str(run.get("mode")))} mode, seeds {esc(", ".join(map(str, seeds)))} · {timing} · '
        f'{esc(_date(run))} UTC</div>'
        f'<div class="links">{"".join(links)}</div></div>'
    )


def _status_table(records: list[PaperRecord], root: Path) -> str:
    esc = html.escape
    head = ("#", "paper", "status", "mode · seeds", "runtime", "× probe", "claims quick", "claims full", "sanity",
            "run", "commit")
    rows = []
    for rec in records:
        run = _show_run(rec)
        if run is None:
            continue
        c = rec.counts()
        status = run.get("status", "failed") + (" (stale)" if run.get("_stale") else "")
        commit = ((run.get("git") or {}).get("commit") or "")[:8]
        seeds = c["quick_seeds"] if run.get("mode") == "quick" else c["full_seeds"]
        ratio = _ratio(run)
        rows.append(
            f'<tr><td class="num">{rec.paper.number}</td><td><a href="#{esc(rec.paper.slug)}">{esc(rec.paper.slug)}'
            f'</a></td><td>{_badge(status, "ok" if run.get("status") == "ok" and not run.get("_stale") else "failed" if run.get("status") != "ok" else "stale")}</td>'
            f'<td>{esc(str(run.get("mode")))} · {esc(",".join(map(str, seeds)))}</td>'
            f'<td class="num">{float(run.get("duration_s") or 0):.1f} s</td>'
            f'<td class="num">{"" if ratio is None else f"{ratio:g}"}</td>'
            f'<td class="num">{_count_text(c["held_quick"], c["claims"])}</td>'
            f'<td class="num">{_count_text(c["held_full"], c["claims"])}</td>'
            f'<td class="num">{c["sanity_passed"]}/{c["sanity"]}</td><td>{esc(_date(run))}</td>'
            f'<td><code>{esc(commit)}</code></td></tr>')
    ths = "".join(f"<th>{h}</th>" for h in head)
    return f'<table class="status"><thead><tr>{ths}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _header(title: str, subtitle: str) -> str:
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width,initial-scale=1'><title>{html.escape(title)}</title>"
            f"<style>{CSS}</style></head><body><header class='top'><h1>{html.escape(title)}</h1>"
            f"<div class='sub'>{subtitle}</div></header><main>")


def _generated(runs: dict) -> str:
    commits = sorted({((r.get("git") or {}).get("commit") or "")[:8] for rs in runs.values() for r in rs} - {""})
    newest = max((r.get("started", "") for rs in runs.values() for r in rs), default="")
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M")
    parts = [f"page built {now} UTC"]
    if newest:
        parts.append(f"newest run {newest[:16].replace('T', ' ')} UTC")
    if commits:
        parts.append("commit " + ", ".join(commits[:3]) + (" …" if len(commits) > 3 else ""))
    return " · ".join(parts)


def render_index(all_papers: Iterable[Paper], runs: dict[str, list[dict]], root: Path) -> str:
    registered = list(all_papers)
    all_papers = with_unregistered(registered, runs)
    records = [paper_record(p, runs.get(p.slug, [])) for p in all_papers]
    available = [r for r in records if r.paper.notebook or runs.get(r.paper.slug)]
    planned = [r.paper for r in records if not r.paper.notebook and not runs.get(r.paper.slug)]
    t = suite_record(registered, runs)["totals"]
    stats = [
        (f"{t['with_notebook']}/{t['papers']}", "papers with a notebook"),
        (str(t["claims"]), "paper claims checked"),
        (f"{t['held_quick']}/{t['claims_run_quick']}", "held on every seed run in quick mode"),
        (f"{t['held_full']}/{t['claims_run_full']}" if t["papers_full"] else "not run",
         f"held in full mode ({t['papers_full']} paper{'s' if t['papers_full'] != 1 else ''} run)" if t["papers_full"] else "full mode"),
        (str(t["not_reproduced"]), "not reproduced (reasons in each notebook)"),
        (f"{t['sanity_passed']}/{t['sanity']}", "sanity checks passed (not counted as claims)"),
    ]
    record = "".join(f"<div class='stat'><b>{html.escape(v)}</b><span>{html.escape(k)}</span></div>" for v, k in stats)
    legend = ("<div class='legend'><b>How to read the badges:</b> <i>claims held k/n quick</i>: of the paper's n "
              "checkable claims, k held on every seed of the latest quick-mode runs (some claims are honestly "
              "expected only at full scale); <i>full k/n</i>: the same for the latest full-mode runs, or "
              "<i>full not run</i>; <i>sanity</i>: checks that hold by construction when the code is right, counted "
              "apart; <i>stale</i>: the newest run failed and the last good one is shown. "
              "<a href='CLAIMS.html'>Every claim, with its verdict and reason</a>.</div>")
    cards = "\n".join(_card(r, root) for r in available)
    planned_html = ""
    if planned:
        items = "".join(f"<li>{p.number}. <a href='{html.escape(p.url)}'>{html.escape(p.title)}</a> "
                        f"<code>{html.escape(p.slug)}</code></li>" for p in planned)
        planned_html = f"<h2 class='section'>Planned ({len(planned)})</h2><ul class='planned'>{items}</ul>"
    sub = (f"Executable reproductions of ICLR 2026 papers, with an honest claims ledger · {_generated(runs)} · "
           f"<a href='CLAIMS.html'>claims scoreboard</a>")
    return (_header("iclr26-repro: ICLR 2026 reproductions", sub)
            + f"<div class='record'>{record}</div>{legend}<div class='grid'>\n{cards}\n</div>"
            + f"<h2 class='section'>Status</h2>{_status_table(available, root)}{planned_html}</main></body></html>\n")


def _verdict(row: ClaimRow) -> tuple[str, str]:
    quick, full = row.held_all("quick"), row.held_all("full")
    if row.kind == "sanity":
        ok = all(row.holds.values()) if row.holds else False
        return ("sanity check passed", "info") if ok else ("sanity check FAILED", "failed")
    if quick or full:
        where = " and ".join(m for m, v in (("quick", quick), ("full", full)) if v)
        return f"reproduced ({where})", "ok"
    expected = [m for m, e in row.expected.items() if e]
    if not expected:
        return "not reproduced (expected in no mode)", "warn"
    ran = {m for (m, _) in row.holds}
    if set(expected) - ran:
        return f"not reproduced here (expected in {' and '.join(sorted(expected))} mode, not run)", "none"
    return "NOT REPRODUCED (expected)", "failed"


def _measured_text(row: ClaimRow, mode: str) -> str:
    vals = [(s, row.measured[(m, s)]) for (m, s) in sorted(row.measured, key=lambda k: (k[0], k[1] or 0)) if m == mode]
    return " / ".join(_fmt(v) for _, v in vals)


def render_claims_html(all_papers: Iterable[Paper], runs: dict[str, list[dict]], root: Path) -> str:
    esc = html.escape
    all_papers = with_unregistered(all_papers, runs)
    parts = [_header("iclr26-repro: claims scoreboard",
                     f"Every paper claim and sanity check of the latest runs · {_generated(runs)} · "
                     f"<a href='index.html'>gallery</a>")]
    head = ("id", "kind", "statement", "paper", "measured quick (per seed)", "measured full", "test",
            "held quick", "held full", "verdict")
    for p in all_papers:
        records = runs.get(p.slug, [])
        if not records:
            continue
        rec = paper_record(p, records)
        run = _show_run(rec)
        report = Path(run["_dir"]) / f"{p.slug}.html" if run else None
        reason = (f"{_rel(report, root)}#{REASON_ANCHOR}" if report is not None and report.exists() else None)
        c = rec.counts()
        parts.append(f"<h2 class='section' id='{esc(p.slug)}'>{p.number}. {esc(p.title)}</h2>"
                     f"<div class='meta'><code>{esc(p.slug)}</code> · {_claim_badges(c)}"
                     + (f" · <a href='{esc(_rel(report, root))}'>executed report</a>" if reason else "") + "</div>")
        rows = []
        for row in rec.rows:
            verdict, cls = _verdict(row)
            link = (f" <a href='{esc(reason)}'>why</a>" if reason and cls in ("warn", "failed", "none") else "")
            hq, nq = row.held_count("quick")
            hf, nf = row.held_count("full")
            rows.append(
                f"<tr><td>{esc(row.id)}</td><td>{esc(row.kind)}</td><td>{esc(row.statement)}</td>"
                f"<td>{esc(_fmt(row.paper_value))}</td><td class='num'>{esc(_measured_text(row, 'quick'))}</td>"
                f"<td class='num'>{esc(_measured_text(row, 'full'))}</td>"
                f"<td>{esc(row.comparison)} {esc(_fmt(row.threshold))}</td>"
                f"<td class='num'>{f'{hq}/{nq}' if nq else '–'}</td><td class='num'>{f'{hf}/{nf}' if nf else '–'}</td>"
                f"<td>{_badge(verdict, cls)}{link}</td></tr>")
        ths = "".join(f"<th>{h}</th>" for h in head)
        parts.append(f"<table class='claims'><thead><tr>{ths}</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    parts.append("</main></body></html>\n")
    return "".join(parts)


def _md(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_claims(all_papers: Iterable[Paper], runs: dict[str, list[dict]]) -> str:
    """The Markdown scoreboard (``CLAIMS.md``): the record, then every claim per paper, then every run's entries."""
    all_papers = list(all_papers)
    rec = suite_record(all_papers, runs)
    lines = ["# Claims scoreboard", "",
             "Generated by `python -m lib run` / `python -m lib gallery` from the runs under this folder "
             "(`CLAIMS.html` is the same with colours and links).", "", "## Record", "",
             format_record(rec, fmt="markdown"), "",
             "## Per claim, over seeds (latest run of each seed)", "",
             "| paper | mode | claim | kind | statement | expected | held on seeds |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    order = [p.slug for p in all_papers] + sorted(set(runs) - {p.slug for p in all_papers})
    for slug in order:
        for mode in ("quick", "full"):
            for row in seed_scoreboard(runs.get(slug, []), mode):
                lines.append(f"| {slug} | {mode} | {_md(row['id'])} | {row['kind']} | {_md(row['statement'])} | "
                             f"{'yes' if row['expected'] else 'no'} | {row['held']}/{row['runs']} |")
    lines += ["", "## Every claim of every run", "",
              "| paper | mode | seed | status | claim | kind | paper value | measured | test | expected | holds |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for slug in order:
        for r in sorted(runs.get(slug, []), key=lambda r: (r.get("mode", ""), r.get("seed", 0), r["_failed_attempt"])):
            status = r.get("status", "") + (" (failed rerun)" if r["_failed_attempt"] else "")
            if not r["_claims"]:
                lines.append(f"| {slug} | {r.get('mode')} | {r.get('seed')} | {status} | (no claims written) "
                             f"| | | | | | |")
            for c in sorted(r["_claims"], key=lambda c: claim_sort_key(c["id"])):
                lines.append(
                    f"| {slug} | {r.get('mode')} | {r.get('seed')} | {status} | {_md(c['id'])} | {c.get('kind')} | "
                    f"{_md(_fmt(c.get('paper_value')))} | {_md(_fmt(c.get('measured')))} | "
                    f"{_md(c.get('comparison'))} {_md(_fmt(c.get('threshold')))} | "
                    f"{'yes' if c.get('expected') else 'no'} | {'yes' if c.get('holds') else 'NO'} |"
                )
    return "\n".join(lines) + "\n"


def seed_scoreboard(records: list[dict], mode: str) -> list[dict]:
    """Per entry id: on how many of the latest seeds' runs it held."""
    table: dict[str, dict] = {}
    for r in latest_by_seed(records, mode):
        for c in r["_claims"]:
            row = table.setdefault(c["id"], {"id": c["id"], "kind": c.get("kind", "claim"),
                                             "statement": c["statement"], "held": 0, "runs": 0,
                                             "expected": c.get("expected", False)})
            row["runs"] += 1
            row["held"] += bool(c.get("holds"))
    return sorted(table.values(), key=lambda r: claim_sort_key(r["id"]))


def format_record(record: dict, fmt: str = "table") -> str:
    """The record as a terminal table, Markdown or JSON (``python -m lib claims``)."""
    if fmt == "json":
        return json.dumps(record, indent=2)
    head = ("paper", "claims", "held quick", "held full", "not reproduced", "sanity", "quick seeds", "full seeds")
    rows = []
    for r in record["papers"]:
        rows.append((r["paper"], str(r["claims"]), _count_text(r["held_quick"], r["claims"]),
                     _count_text(r["held_full"], r["claims"]), str(r["not_reproduced"]),
                     f"{r['sanity_passed']}/{r['sanity']}", ",".join(map(str, r["quick_seeds"])) or "-",
                     ",".join(map(str, r["full_seeds"])) or "-"))
    t = record["totals"]
    rows.append(("TOTAL", str(t["claims"]), f"{t['held_quick']}/{t['claims_run_quick']}",
                 f"{t['held_full']}/{t['claims_run_full']}" if t["papers_full"] else "not run",
                 str(t["not_reproduced"]), f"{t['sanity_passed']}/{t['sanity']}", "", ""))
    if fmt == "markdown":
        out = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
        out += ["| " + " | ".join(_md(v) for v in row) + " |" for row in rows]
        return "\n".join(out)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    line = lambda vals: "  ".join(v.ljust(w) for v, w in zip(vals, widths))  # noqa: E731
    out = [line(head), line(["-" * w for w in widths])] + [line(r) for r in rows]
    return "\n".join(out)


def build(root: Path, all_papers: Optional[Iterable[Paper]] = None) -> tuple[Path, Path]:
    """Rebuild ``index.html``, ``CLAIMS.html`` and ``CLAIMS.md`` under ``root``; returns (index, CLAIMS.md)."""
    from .report import ensure_static

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    all_papers = list(all_papers if all_papers is not None else registry_papers())
    runs = collect_runs(root)
    ensure_static(root)
    index, claims_md, claims_html = root / "index.html", root / "CLAIMS.md", root / "CLAIMS.html"
    write_text_atomic(index, render_index(all_papers, runs, root))
    write_text_atomic(claims_html, render_claims_html(all_papers, runs, root))
    write_text_atomic(claims_md, render_claims(all_papers, runs))
    return index, claims_md
