"""The claims ledger: each checkable sentence of a paper, its measured value and its verdict.

``claims.json`` has the shape other tools read::

    {"paper": slug, "mode": "quick"|"full", "seed": int,
     "claims": [{"id", "statement", "paper_value", "measured", "comparison", "threshold",
                 "holds": bool, "expected": bool, "kind": "claim"|"sanity"}]}

``expected`` says whether the claim is expected to hold in this run's mode. ``kind`` separates the paper's
claims from sanity checks:

- a **claim** is something the paper asserts about the world that a run could refute (for each one, the author can
  name the outcome that would refute it);
- a **sanity check** verifies the implementation: an identity, an optimality condition, a guarantee that holds by
  construction of the code. It is useful, and still judged (an expected sanity check that fails raises), but it is
  never counted as a reproduced paper claim. :meth:`ClaimsLedger.finalize`
writes the file and raises :class:`ClaimsNotReproduced` when an expected claim does not hold, so a
regression fails nbval and the runner.
"""
from __future__ import annotations

import json
import math
import numbers
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Optional

COMPARISONS = ("<=", "<", ">=", ">", "==", "!=", "in")
KINDS = ("claim", "sanity")


def claim_sort_key(claim_id: str) -> tuple:
    """Natural order of claim ids: C2 < C2b < C4 < C10 (so tables list C4 before C5 whatever the run order)."""
    import re

    parts = re.split(r"(\d+)", str(claim_id))
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts if p != "")


class ClaimsNotReproduced(AssertionError):
    """An expected claim did not hold in this run."""


def _plain(value: Any) -> Any:
    """numpy scalars/arrays -> plain Python values for JSON and printing."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return _plain(value.tolist())
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


def _fmt(value: Any) -> str:
    value = _plain(value)
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return str(value)


def compare(measured: Any, comparison: str, threshold: Any) -> bool:
    """Whether ``measured <comparison> threshold`` holds; NaN or missing never holds."""
    m, t = _plain(measured), _plain(threshold)
    if m is None or (isinstance(m, float) and math.isnan(m)):
        return False
    if comparison == "in":
        lo, hi = t
        return bool(lo <= m <= hi)
    ops = {
        "<=": lambda a, b: a <= b,
        "<": lambda a, b: a < b,
        ">=": lambda a, b: a >= b,
        ">": lambda a, b: a > b,
        "==": lambda a, b: a == b,
        "!=": lambda a, b: a != b,
    }
    return bool(ops[comparison](m, t))


def write_json_atomic(path: Path, payload: Any) -> None:
    """Write JSON so that readers never see a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, indent=2, ensure_ascii=False)
            fh.write("\n")
        os.chmod(tmp, 0o644)  # mkstemp makes 0600 files; reports are read by users and web servers
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class ClaimsLedger:
    """Collects claims during a run; ``finalize()`` shows the table, writes ``claims.json`` and judges."""

    def __init__(self, paper: str, mode: str, seed: int, out_dir: Optional[Path] = None):
        if mode not in ("quick", "full"):
            raise ValueError(f"parameter 'mode' got {mode!r}; allowed: 'quick', 'full'")
        self.paper, self.mode, self.seed = paper, mode, int(seed)
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self.claims: list[dict] = []
        self._expected_in: dict[str, tuple] = {}

    def check(
        self,
        id: str,
        statement: str,
        *,
        paper_value: Any,
        measured: Any,
        comparison: str,
        threshold: Any,
        expected_in: Iterable[str] = ("quick", "full"),
        kind: str = "claim",
        quiet: bool = False,
    ) -> bool:
        """Record one claim (or sanity check) and print its verdict line; returns whether it holds.

        ``comparison`` is one of ``<=, <, >=, >, ==, !=, in`` (``in``: threshold is ``[lo, hi]``).
        ``expected_in`` lists the modes in which the claim is expected to hold.
        ``kind`` is ``"claim"`` (a paper's assertion a run could refute) or ``"sanity"`` (holds by construction
        when the code is right: an identity, an optimality condition, a guarantee the code enforces).
        """
        if kind not in KINDS:
            raise ValueError(f"claim {id!r}: kind {kind!r}; allowed: 'claim' (a paper claim a run could refute) "
                             f"or 'sanity' (holds by construction)")
        if comparison not in COMPARISONS:
            raise ValueError(f"claim {id!r}: comparison {comparison!r} not in {COMPARISONS}")
        if comparison == "in" and not (isinstance(threshold, (list, tuple)) and len(threshold) == 2):
            raise ValueError(f"claim {id!r}: comparison 'in' needs threshold [lo, hi]")
        expected_in = tuple(expected_in)
        bad = [m for m in expected_in if m not in ("quick", "full")]
        if bad:
            raise ValueError(f"claim {id!r}: expected_in has unknown mode(s) {bad}; allowed: 'quick', 'full'")
        if any(c["id"] == id for c in self.claims):
            raise ValueError(f"claim {id!r} was already checked in this run")
        holds = compare(measured, comparison, threshold)
        expected = self.mode in expected_in
        record = {
            "id": str(id),
            "statement": str(statement),
            "paper_value": _plain(paper_value),
            "measured": _plain(measured),
            "comparison": comparison,
            "threshold": _plain(threshold),
            "holds": holds,
            "expected": expected,
            "kind": kind,
        }
        self.claims.append(record)
        self._expected_in[record["id"]] = expected_in
        if not quiet:
            print(self.verdict_line(record))
        return holds

    def verdict(self, record: dict) -> str:
        sanity = record.get("kind") == "sanity"
        if record["holds"]:
            return "sanity check passed" if sanity else "reproduced"
        if record["expected"]:
            return "SANITY CHECK FAILED" if sanity else "NOT REPRODUCED"
        modes = self._expected_in.get(record["id"], ())
        if not modes:
            return "not reproduced (known: expected in no mode, see the notebook)"
        return f"not reproduced (expected only in {' and '.join(modes)} mode)"

    def verdict_line(self, record: dict) -> str:
        tag = " (sanity)" if record.get("kind") == "sanity" else ""
        return (
            f"[{record['id']}]{tag} {self.verdict(record)}: measured {_fmt(record['measured'])} "
            f"{record['comparison']} {_fmt(record['threshold'])} (paper: {_fmt(record['paper_value'])})"
        )

    def to_dict(self) -> dict:
        return {"paper": self.paper, "mode": self.mode, "seed": self.seed, "claims": list(self.claims)}

    def table(self):
        import pandas as pd

        rows = [
            {
                "id": c["id"],
                "kind": c.get("kind", "claim"),
                "claim": c["statement"],
                "paper": _fmt(c["paper_value"]),
                "measured": _fmt(c["measured"]),
                "test": f"{c['comparison']} {_fmt(c['threshold'])}",
                "expected in " + self.mode: "yes" if c["expected"] else "no",
                "verdict": self.verdict(c),
            }
            for c in sorted(self.claims, key=lambda c: claim_sort_key(c["id"]))
        ]
        return pd.DataFrame(rows).set_index("id") if rows else pd.DataFrame()

    def html_table(self) -> str:
        """The ledger as an HTML table: full statements, left-aligned, ordered by id, verdicts coloured."""
        import html as _html

        colours = {"held": ("#d9f2de", "#17672a"), "failed": ("#f8d7da", "#8a1c25"),
                   "known": ("#fff3cd", "#7a5b00"), "sanity": ("#e7eefb", "#1d4f91")}
        head = ("id", "kind", "claim", "paper", "measured", "test", f"expected in {self.mode}", "verdict")
        cell = "padding:4px 8px;text-align:left;vertical-align:top;border-bottom:1px solid #e3e3e3"
        rows = []
        for c in sorted(self.claims, key=lambda c: claim_sort_key(c["id"])):
            sanity = c.get("kind") == "sanity"
            state = ("sanity" if sanity else "held") if c["holds"] else ("failed" if c["expected"] else "known")
            bg, fg = colours[state]
            values = (c["id"], c.get("kind", "claim"), c["statement"], _fmt(c["paper_value"]), _fmt(c["measured"]),
                      f"{c['comparison']} {_fmt(c['threshold'])}", "yes" if c["expected"] else "no")
            tds = "".join(f'<td style="{cell}">{_html.escape(str(v))}</td>' for v in values)
            tds += (f'<td style="{cell}"><span style="background:{bg};color:{fg};padding:1px 6px;border-radius:8px;'
                    f'font-weight:600;white-space:nowrap">{_html.escape(self.verdict(c))}</span></td>')
            rows.append(f"<tr>{tds}</tr>")
        ths = "".join(f'<th style="{cell};background:#f4f5f7">{h}</th>' for h in head)
        return (f'<table class="iclr26-claims" style="border-collapse:collapse;width:100%;font-size:12.5px">'
                f"<thead><tr>{ths}</tr></thead><tbody>{''.join(rows)}</tbody></table>")

    def write(self, out_dir: Optional[Path] = None) -> Path:
        target = Path(out_dir) if out_dir is not None else self.out_dir
        if target is None:
            raise ValueError("ClaimsLedger has no out_dir to write claims.json to")
        path = target / "claims.json"
        write_json_atomic(path, self.to_dict())
        return path

    def failures(self) -> list[dict]:
        return [c for c in self.claims if c["expected"] and not c["holds"]]

    def finalize(self, display: bool = True) -> None:
        """Show the table, write ``claims.json``; raise if a claim expected in this mode did not hold.

        Returns nothing (so a notebook's last line does not show the table twice); ``table()`` gives it.
        """
        if not self.claims:
            raise ValueError(f"{self.paper}: the ledger holds no claims")
        table = self.table()
        if display:
            try:
                from IPython.display import HTML, display as _display

                _display(HTML(self.html_table()))
            except ImportError:  # pragma: no cover - IPython is a dependency
                print(table.to_string())
        path = self.write() if self.out_dir is not None else None
        claims = [c for c in self.claims if c.get("kind") != "sanity"]
        sanity = [c for c in self.claims if c.get("kind") == "sanity"]
        held = sum(c["holds"] for c in claims)
        expected = sum(c["expected"] for c in claims)
        sanity_text = f"; sanity checks {sum(c['holds'] for c in sanity)}/{len(sanity)} passed" if sanity else ""
        print(
            f"{self.paper} ({self.mode}, seed {self.seed}): {held}/{len(claims)} paper claims reproduced "
            f"({expected} expected in {self.mode} mode){sanity_text}" + (f"; written to {path}" if path else "")
        )
        failed = self.failures()
        if failed:
            raise ClaimsNotReproduced(
                f"{len(failed)} claim(s) expected in {self.mode} mode did not hold: "
                + "; ".join(self.verdict_line(c) for c in failed)
            )
