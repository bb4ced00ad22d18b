"""The user-file contract over every declared loader: fixtures load, malformed copies fail with a clear message.

Each paper declares its user-file parameters in ``lib/<slug>/__init__.py`` as ``LOADERS`` (see
``lib.common.userfiles``). Every ``*_path`` parameter of a notebook must be declared; each declared loader must
read its fixture, and refuse every malformed variant of it with a ``ValueError`` that names the parameter.
"""
import importlib
from pathlib import Path

import pytest

from lib.common.userfiles import VARIANTS, UserFileLoader, malformed_variants
from lib.suite.notebooks import notebook_parameters
from lib.suite.registry import papers

ROOT = Path(__file__).resolve().parents[1]
AVAILABLE = [p for p in papers() if p.notebook_path.exists()]


def _loaders(slug):
    module = importlib.import_module(f"lib.{slug}")
    return getattr(module, "LOADERS", {})


DECLARED = [(p.slug, name) for p in AVAILABLE for name in _loaders(p.slug)]


@pytest.mark.parametrize("slug", [p.slug for p in AVAILABLE])
def test_every_path_parameter_has_a_declared_loader(slug):
    params = notebook_parameters(ROOT / "notebooks" / f"{slug}.ipynb")
    loaders = _loaders(slug)
    for name, loader in loaders.items():
        assert isinstance(loader, UserFileLoader) and loader.parameter == name
        assert name in params, f"{slug}: LOADERS declares {name!r}, which is not a notebook parameter"
    undeclared = sorted(n for n in params if n.endswith("_path") and n not in loaders)
    assert not undeclared, f"{slug}: declare a loader for {undeclared} in lib/{slug}/__init__.py LOADERS"


@pytest.mark.parametrize("slug, name", DECLARED, ids=[f"{s}-{n}" for s, n in DECLARED])
def test_loader_reads_its_fixture(slug, name):
    loader = _loaders(slug)[name]
    assert loader.fixture_path().exists(), f"{slug}: fixture {loader.fixture} does not exist"
    loader(loader.fixture_path())


@pytest.mark.parametrize("slug, name", DECLARED, ids=[f"{s}-{n}" for s, n in DECLARED])
def test_loader_refuses_malformed_files_clearly(slug, name, tmp_path):
    loader = _loaders(slug)[name]
    failures = []
    for variant, path in malformed_variants(loader, tmp_path):
        try:
            loader(path)
        except ValueError as exc:
            msg = str(exc)
            if f"'{name}'" not in msg and f'"{name}"' not in msg:
                failures.append(f"{variant}: message does not name {name!r}: {msg[:200]}")
        except Exception as exc:  # noqa: BLE001 - anything but ValueError breaks the contract
            failures.append(f"{variant}: {type(exc).__name__} instead of ValueError: {str(exc)[:200]}")
        else:
            failures.append(f"{variant}: accepted (skip it in LOADERS with a reason if the format allows it)")
    assert not failures, f"{slug} {name}:\n" + "\n".join(failures)
    assert set(loader.skip) <= set(VARIANTS)
