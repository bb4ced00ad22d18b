"""Suite tests: registry, notebooks, README, environment and data manifest stay in step."""
import ast
import hashlib
import json
import re
import tomllib
from pathlib import Path

import nbformat
import pytest
import yaml

from lib.suite.notebooks import is_stripped, notebook_parameters, parameters_cells
from lib.suite.registry import FIELDS, papers, readme_table, render_readme

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
AVAILABLE = [p for p in papers() if p.notebook]


def test_registry_has_27_unique_papers():
    ps = papers()
    assert len(ps) == 27
    assert len({p.slug for p in ps}) == 27 and [p.number for p in ps] == list(range(1, 28))
    for p in ps:
        assert p.slug.isidentifier() and p.slug == p.slug.lower()
        assert p.title and p.authors and p.venue == "ICLR 2026" and (p.arxiv or p.openreview)
        assert p.code == "" or p.code.startswith("https://")
        assert 0 < p.quick_budget_s <= 60


def test_registry_matches_notebooks_on_disk():
    on_disk = {nb.stem for nb in NOTEBOOKS}
    listed = {p.slug for p in papers()}
    assert on_disk <= listed, f"notebooks not in lib/papers.toml: {sorted(on_disk - listed)}"
    flagged = {p.slug for p in AVAILABLE}
    assert flagged == on_disk, (
        f"notebook = true but no notebook: {sorted(flagged - on_disk)}; "
        f"notebook exists but registry says planned: {sorted(on_disk - flagged)}"
    )


def test_every_available_paper_has_package_and_tests():
    for p in AVAILABLE:
        assert (ROOT / "lib" / p.slug / "__init__.py").exists(), f"lib/{p.slug}/ missing"
        assert (ROOT / "tests" / f"test_{p.slug}.py").exists(), f"tests/test_{p.slug}.py missing"


def test_readme_table_is_current():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert render_readme(text, readme_table()) == text, "README's paper table is stale: run `python -m lib readme`"


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = set(project["dependencies"]) | set(project["optional-dependencies"]["dev"])
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    listed = {d for d in pip_section if not d.startswith("-e")}
    assert listed == wanted, f"only in environment.yml: {listed - wanted}; only in pyproject: {wanted - listed}"
    assert "torch==2.13.0" in project["dependencies"] and pip_section[0] == "torch==2.13.0"
    assert any(d.startswith("python=3.11") for d in env["dependencies"] if isinstance(d, str))


def test_no_sys_path_edits():
    offenders = []
    for path in list((ROOT / "lib").rglob("*.py")) + list((ROOT / "tests").rglob("*.py")):
        if path.name == "test_suite.py":
            continue
        if re.search(r"sys\.path\.(insert|append)|sys\.path\s*\+?=", path.read_text(encoding="utf-8")):
            offenders.append(str(path.relative_to(ROOT)))
    for nb in NOTEBOOKS:
        if "sys.path" in nb.read_text(encoding="utf-8"):
            offenders.append(str(nb.relative_to(ROOT)))
    assert not offenders


def test_data_manifest_lists_every_file_with_its_sha256():
    data = ROOT / "data"
    manifest = (data / "README.md").read_text(encoding="utf-8")
    rows = {}
    for line in manifest.splitlines():
        m = re.match(r"\|\s*`?([^|`]+?)`?\s*\|\s*(\d+)\s*\|\s*`?([0-9a-f]{64})`?\s*\|", line)
        if m:
            rows[m.group(1)] = (int(m.group(2)), m.group(3))
    files = [p for p in data.rglob("*") if p.is_file() and p.name != "README.md" and "__pycache__" not in p.parts]
    for f in files:
        rel = f.relative_to(data).as_posix()
        assert rel in rows, f"data/{rel} is not listed in data/README.md"
        size, sha = rows[rel]
        assert f.stat().st_size == size, f"data/{rel}: size differs from data/README.md"
        assert hashlib.sha256(f.read_bytes()).hexdigest() == sha, f"data/{rel}: sha256 differs from data/README.md"
    missing = sorted(set(rows) - {f.relative_to(data).as_posix() for f in files})
    assert not missing, f"data/README.md lists files that do not exist: {missing}"


# --- notebook anatomy -------------------------------------------------------------------------------------------
@pytest.fixture(params=NOTEBOOKS, ids=[nb.stem for nb in NOTEBOOKS])
def notebook(request):
    return request.param, nbformat.read(str(request.param), as_version=4)


def test_notebook_is_stripped(notebook):
    path, _ = notebook
    assert is_stripped(path), f"{path.name} has outputs or execution counts: run `python -m lib strip`"


def test_notebook_parameters_cell(notebook):
    path, nb = notebook
    assert len(parameters_cells(nb)) == 1
    params = notebook_parameters(path)  # raises unless every line is `name = <literal>`
    assert params.get("mode") == "quick" and isinstance(params.get("seed"), int)
    assert "out_dir" in params and params["out_dir"] is None and params.get("device") == "auto"
    src = parameters_cells(nb)[0].source
    for line in src.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            assert "#" in line, f"{path.name}: parameter line without a comment: {line!r}"


def test_notebook_header_names_the_paper(notebook):
    path, nb = notebook
    paper = next(p for p in papers() if p.slug == path.stem)
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.lstrip().startswith("#")
    assert paper.title in first.source, f"{path.name}: header must carry the registry title {paper.title!r}"
    assert (paper.arxiv and paper.arxiv in first.source) or (paper.openreview and paper.openreview in first.source)


def test_notebook_sections_and_final_claims_cell(notebook):
    path, nb = notebook
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "ledger.finalize()" in code[-1].source, f"{path.name}: the last code cell must call ledger.finalize()"
    md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert re.search(r"^#+\s*Figure 1\b", md, flags=re.M), f"{path.name}: no 'Figure 1: ...' section"
    assert re.search(r"^#+\s*Differences from the paper", md, flags=re.M)
    assert re.search(r"^#+\s*Try it", md, flags=re.M)
    setup = "\n".join(c.source for c in code[1:3])
    assert "config(" in setup and "ledger" in setup, f"{path.name}: setup must build cfg via config() and a ledger"


def test_notebook_cells_define_no_logic(notebook):
    path, nb = notebook
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        tree = ast.parse(cell.source)
        defs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        assert not defs, f"{path.name}: code cell {i} defines {[d.name for d in defs]}: logic belongs in lib/"
        assert cell.source.count("\n") < 40, f"{path.name}: code cell {i} is longer than a screen"


def _ledger_checks(nb) -> list[ast.Call]:
    calls = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "check"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "ledger"):
                calls.append(node)
    return calls


def test_notebook_checks_at_least_one_refutable_paper_claim(notebook):
    """Every ledger entry has a paper value and a threshold; at least one is a paper claim, not a sanity check."""
    path, nb = notebook
    calls = _ledger_checks(nb)
    assert calls, f"{path.name}: no ledger.check(...) call"
    kinds = []
    for call in calls:
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        for needed in ("paper_value", "threshold", "measured", "comparison"):
            assert needed in kw, f"{path.name}: a ledger.check lacks {needed}="
            assert not (isinstance(kw[needed], ast.Constant) and kw[needed].value is None), (
                f"{path.name}: a ledger.check has {needed}=None")
        kind = kw.get("kind")
        assert kind is None or isinstance(kind, ast.Constant), f"{path.name}: kind= must be a literal"
        kinds.append("claim" if kind is None else kind.value)
    assert set(kinds) <= {"claim", "sanity"}
    assert "claim" in kinds, f"{path.name}: every ledger entry is a sanity check; check at least one paper claim"


def test_papermill_reads_every_parameter(notebook):
    """papermill's own parser skips a parameter line it cannot read (an apostrophe or '=' in its comment), and then
    warns 'Passed unknown parameter' when the runner sets it; every parameter must be visible to it."""
    from papermill.translators import papermill_translators

    path, nb = notebook
    translator = papermill_translators.find_translator("python", "python")
    seen = {p.name for p in translator.inspect(parameters_cells(nb)[0])}
    missing = sorted(set(notebook_parameters(path)) - seen)
    assert not missing, f"{path.name}: papermill cannot parse the parameter line(s) of {missing}: reword the comment"
