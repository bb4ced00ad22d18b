"""Unit tests of lib.common: parameter checks, devices, seeding, the claims ledger, figures, configuration."""
import json
import math

import numpy as np
import pytest

from lib.common import (
    ClaimsLedger,
    ClaimsNotReproduced,
    check_bool,
    check_choice,
    check_float,
    check_int,
    check_path,
    make_config,
    resolve_device,
    resolve_out_dir,
    rng_for,
    save_figure,
    torch_generator,
)
from lib.common.claims import compare, write_json_atomic


# --- parameter checks -------------------------------------------------------------------------------------------
def test_check_choice_message_names_parameter_value_and_allowed():
    assert check_choice("mode", "full", ("quick", "full")) == "full"
    with pytest.raises(ValueError) as err:
        check_choice("mode", "fast", ("quick", "full"))
    msg = str(err.value)
    assert "'mode'" in msg and "'fast'" in msg and "'quick'" in msg and "'full'" in msg


@pytest.mark.parametrize("value", [1.5, "3", True, None, -1])
def test_check_int_refuses(value):
    with pytest.raises(ValueError, match="'n_samples'"):
        check_int("n_samples", value, lo=0)


def test_check_int_bounds_and_numpy_ints():
    assert check_int("k", np.int64(3), lo=1, hi=3) == 3
    with pytest.raises(ValueError, match=r"<= 3"):
        check_int("k", 4, lo=1, hi=3)


def test_check_float_open_bounds_and_nan():
    assert check_float("lr", 1, lo=0, lo_open=True) == 1.0
    with pytest.raises(ValueError, match="> 0"):
        check_float("lr", 0.0, lo=0, lo_open=True)
    with pytest.raises(ValueError):
        check_float("lr", float("nan"))
    with pytest.raises(ValueError):
        check_float("lr", True)


def test_checks_take_none_only_when_allowed():
    assert check_int("n", None, lo=1, allow_none=True) is None
    assert check_float("lr", None, lo=0, allow_none=True) is None
    assert check_bool("flag", None, allow_none=True) is None
    assert check_int("n", 5, lo=1, allow_none=True) == 5
    with pytest.raises(ValueError, match=r"'n' got None; allowed: an integer >= 1$"):
        check_int("n", None, lo=1)
    with pytest.raises(ValueError, match=r"'n' got 0; allowed: None \(the mode's default\) or an integer >= 1"):
        check_int("n", 0, lo=1, allow_none=True)
    with pytest.raises(ValueError, match="'flag'"):
        check_bool("flag", None)


def test_check_bool_and_path(tmp_path):
    assert check_bool("flag", False) is False
    with pytest.raises(ValueError, match="'flag'"):
        check_bool("flag", 1)
    assert check_path("data_path", None) is None
    f = tmp_path / "x.txt"
    f.write_text("1")
    assert check_path("data_path", str(f)) == f
    with pytest.raises(ValueError, match="'data_path'.*no such file"):
        check_path("data_path", str(tmp_path / "missing.csv"))
    with pytest.raises(ValueError, match="'data_path'"):
        check_path("data_path", 3)


# --- devices ----------------------------------------------------------------------------------------------------
def test_resolve_device():
    import torch

    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match="'device'"):
        resolve_device("gpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="'device'.*0 CUDA"):
            resolve_device("cuda")


# --- seeding ----------------------------------------------------------------------------------------------------
def test_named_streams_are_reproducible_and_independent():
    a1 = rng_for(3, "fig1").normal(size=5)
    a2 = rng_for(3, "fig1").normal(size=5)
    b = rng_for(3, "fig2").normal(size=5)
    c = rng_for(4, "fig1").normal(size=5)
    assert np.array_equal(a1, a2)
    assert not np.allclose(a1, b) and not np.allclose(a1, c)


def test_torch_generator_reproducible():
    import torch

    x = torch.randn(4, generator=torch_generator(0, "w"))
    y = torch.randn(4, generator=torch_generator(0, "w"))
    z = torch.randn(4, generator=torch_generator(1, "w"))
    assert torch.equal(x, y) and not torch.equal(x, z)


# --- configuration ----------------------------------------------------------------------------------------------
def test_make_config_merges_mode_sizes(tmp_path):
    sizes = {"quick": {"n": 10, "k": 2}, "full": {"n": 1000, "k": 2}}
    q = make_config("demo", mode="quick", seed=1, out_dir=tmp_path, sizes=sizes, n=None, k=5, verbose=False)
    f = make_config("demo", mode="full", seed=1, out_dir=tmp_path, sizes=sizes, n=None, verbose=False)
    assert (q.n, q.k, f.n, f.k) == (10, 5, 1000, 2)
    assert q.out_dir == tmp_path.resolve() and (tmp_path / "figures").is_dir()
    assert q.device in ("cpu", "cuda")
    with pytest.raises(AttributeError, match="no parameter 'missing'"):
        q.missing


def test_make_config_validates_common_parameters(tmp_path):
    with pytest.raises(ValueError, match="'mode'"):
        make_config("demo", mode="fast", out_dir=tmp_path, verbose=False)
    with pytest.raises(ValueError, match="'seed'"):
        make_config("demo", seed=-1, out_dir=tmp_path, verbose=False)
    with pytest.raises(ValueError, match="'seed'"):
        make_config("demo", seed=1.5, out_dir=tmp_path, verbose=False)
    with pytest.raises(ValueError, match="'device'"):
        make_config("demo", device="tpu", out_dir=tmp_path, verbose=False)
    with pytest.raises(ValueError, match="'out_dir'"):
        make_config("demo", out_dir=3, verbose=False)


def test_make_config_seeds_global_generators(tmp_path):
    import torch

    make_config("demo", seed=7, out_dir=tmp_path, verbose=False)
    a = (np.random.rand(), torch.rand(1).item())
    make_config("demo", seed=7, out_dir=tmp_path, verbose=False)
    b = (np.random.rand(), torch.rand(1).item())
    assert a == b


def test_resolve_out_dir_default_is_reports_slug(monkeypatch, tmp_path):
    monkeypatch.setenv("ICLR26_REPORTS", str(tmp_path))
    assert resolve_out_dir("some_paper") == tmp_path / "some_paper"
    assert (tmp_path / "some_paper" / "figures").is_dir()


# --- claims ledger ----------------------------------------------------------------------------------------------
def _ledger(tmp_path, mode="quick"):
    return ClaimsLedger(paper="demo", mode=mode, seed=2, out_dir=tmp_path)


def test_ledger_json_shape(tmp_path):
    led = _ledger(tmp_path)
    led.check("C1", "x is small", paper_value=0.1, measured=np.float32(0.05), comparison="<=", threshold=0.1)
    led.check("C2", "only at scale", paper_value=3, measured=1, comparison=">=", threshold=2, expected_in=("full",))
    led.finalize(display=False)
    data = json.loads((tmp_path / "claims.json").read_text())
    assert set(data) == {"paper", "mode", "seed", "claims"}
    assert (data["paper"], data["mode"], data["seed"]) == ("demo", "quick", 2)
    keys = {"id", "statement", "paper_value", "measured", "comparison", "threshold", "holds", "expected", "kind"}
    assert all(set(c) == keys for c in data["claims"])
    c1, c2 = data["claims"]
    assert c1["holds"] is True and c1["expected"] is True and isinstance(c1["measured"], float)
    assert c2["holds"] is False and c2["expected"] is False


def test_ledger_kind_round_trips_and_is_validated(tmp_path):
    led = _ledger(tmp_path)
    led.check("C1", "a paper claim", paper_value=1, measured=1, comparison="==", threshold=1)
    led.check("S1", "an identity", paper_value=0, measured=0.0, comparison="<=", threshold=1e-9, kind="sanity")
    with pytest.raises(ValueError, match="kind 'check'.*'claim'.*'sanity'"):
        led.check("C2", "bad kind", paper_value=1, measured=1, comparison="==", threshold=1, kind="check")
    led.finalize(display=False)
    data = json.loads((tmp_path / "claims.json").read_text())
    assert [c["kind"] for c in data["claims"]] == ["claim", "sanity"]
    assert "(sanity) sanity check passed" in led.verdict_line(led.claims[1])


def test_ledger_failed_sanity_check_raises(tmp_path):
    led = _ledger(tmp_path)
    led.check("C1", "a paper claim", paper_value=1, measured=1, comparison="==", threshold=1)
    led.check("S1", "an identity", paper_value=0, measured=1.0, comparison="<=", threshold=1e-9, kind="sanity")
    with pytest.raises(ClaimsNotReproduced, match="SANITY CHECK FAILED"):
        led.finalize(display=False)


def test_ledger_table_orders_ids_naturally(tmp_path):
    from lib.common.claims import claim_sort_key

    assert sorted(["C10", "C5", "C2b", "C4", "C2"], key=claim_sort_key) == ["C2", "C2b", "C4", "C5", "C10"]
    led = _ledger(tmp_path)
    for cid in ("C5", "C4", "C1"):
        led.check(cid, "x", paper_value=1, measured=1, comparison="==", threshold=1)
    assert list(led.table().index) == ["C1", "C4", "C5"]


def test_ledger_raises_when_expected_claim_fails_but_still_writes(tmp_path):
    led = _ledger(tmp_path)
    led.check("C1", "holds", paper_value=1, measured=1, comparison="==", threshold=1)
    led.check("C2", "fails", paper_value=1, measured=5, comparison="<", threshold=1)
    with pytest.raises(ClaimsNotReproduced, match="C2"):
        led.finalize(display=False)
    assert json.loads((tmp_path / "claims.json").read_text())["claims"][1]["holds"] is False


def test_ledger_expected_only_in_full_mode_raises_in_full(tmp_path):
    led = _ledger(tmp_path, mode="full")
    led.check("C1", "only at scale", paper_value=3, measured=1, comparison=">=", threshold=2, expected_in=("full",))
    with pytest.raises(ClaimsNotReproduced):
        led.finalize(display=False)


def test_ledger_rejects_bad_input(tmp_path):
    led = _ledger(tmp_path)
    with pytest.raises(ValueError, match="comparison"):
        led.check("C1", "s", paper_value=1, measured=1, comparison="~", threshold=1)
    with pytest.raises(ValueError, match="unknown mode"):
        led.check("C1", "s", paper_value=1, measured=1, comparison="<", threshold=1, expected_in=("fast",))
    led.check("C1", "s", paper_value=1, measured=1, comparison="<=", threshold=1)
    with pytest.raises(ValueError, match="already"):
        led.check("C1", "s", paper_value=1, measured=1, comparison="<=", threshold=1)
    with pytest.raises(ValueError, match="no claims"):
        _ledger(tmp_path).finalize(display=False)


def test_compare_semantics():
    assert compare(np.float64(0.5), "in", [0, 1]) and not compare(2, "in", (0, 1))
    assert not compare(float("nan"), "<=", 1) and not compare(None, ">=", 0)
    assert compare(True, "==", True) and not compare(False, "==", True)
    assert compare(3, ">", 2) and not compare(2, ">", 2) and compare(2, ">=", 2)


def test_verdict_lines_are_plain_text(tmp_path, capsys):
    led = _ledger(tmp_path)
    led.check("C1", "s", paper_value=np.float64(1 / 3), measured=np.array(0.123456789), comparison="<", threshold=1)
    out = capsys.readouterr().out
    assert "np." not in out and "array" not in out and "0.1235" in out


def test_write_json_atomic_keeps_old_file_on_failure(tmp_path, monkeypatch):
    path = tmp_path / "x.json"
    write_json_atomic(path, {"a": 1})

    class Boom:
        pass

    with pytest.raises(TypeError):
        write_json_atomic(path, {"a": Boom()})
    assert json.loads(path.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


# --- figures ----------------------------------------------------------------------------------------------------
def test_save_figure_writes_png_and_svg_with_stamp(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cfg = make_config("demo", mode="quick", seed=5, out_dir=tmp_path, verbose=False)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    png = save_figure(fig, "fig1_line", cfg)
    assert png == tmp_path.resolve() / "figures" / "fig1_line.png" and png.stat().st_size > 1000
    svg = (tmp_path / "figures" / "fig1_line.svg").read_text()
    assert "mode=quick" in svg and "seed=5" in svg and "demo" in svg
    with pytest.raises(ValueError, match="fig<k>_<what>"):
        save_figure(fig, "Figure 1", cfg)
    plt.close(fig)
    assert math.isfinite(png.stat().st_size)


def test_save_figure_thumbnail_crops_one_panel(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.image import imread

    cfg = make_config("demo", mode="quick", seed=5, out_dir=tmp_path, verbose=False)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3))
    for ax in axes:
        ax.plot([0, 1], [0, 1], label="line")
    axes[0].legend()
    save_figure(fig, "fig1_three", cfg, thumbnail=axes[0])
    thumb = imread(tmp_path / "figures" / "thumbnail.png")
    full = imread(tmp_path / "figures" / "fig1_three.png")
    # one of three panels: much narrower than the figure (aspect), and not the whole figure
    assert thumb.shape[1] / thumb.shape[0] < 0.6 * full.shape[1] / full.shape[0]
    save_figure(fig, "fig1_three", cfg, thumbnail=True)
    whole = imread(tmp_path / "figures" / "thumbnail.png")
    assert whole.shape[1] / whole.shape[0] > 2.5
    other, ax2 = plt.subplots()
    with pytest.raises(ValueError, match="thumbnail"):
        save_figure(fig, "fig1_three", cfg, thumbnail=ax2)
    plt.close("all")


def test_verdict_wording_says_in_which_modes_a_claim_is_expected(tmp_path, capsys):
    led = _ledger(tmp_path)
    led.check("A", "s", paper_value=1, measured=2, comparison="<=", threshold=1, expected_in=("full",))
    led.check("B", "s", paper_value=1, measured=2, comparison="<=", threshold=1, expected_in=())
    out = capsys.readouterr().out
    assert "expected only in full mode" in out and "expected in no mode" in out
    assert led.finalize(display=False) is None  # nothing expected failed: no raise, nothing returned


def test_limit_threads_caps_and_restores_blas_and_torch():
    import torch
    from threadpoolctl import threadpool_info

    from lib.common import limit_threads

    def blas_threads():
        return {i["filepath"]: i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    before_blas, before_torch = blas_threads(), torch.get_num_threads()
    torch.set_num_threads(2)
    with limit_threads(1):
        assert all(n == 1 for n in blas_threads().values())
        assert torch.get_num_threads() == 1

    @limit_threads(1)
    def inner():
        return torch.get_num_threads()

    assert inner() == 1
    assert torch.get_num_threads() == 2 and blas_threads() == before_blas
    torch.set_num_threads(before_torch)
    with pytest.raises(ValueError, match="integer >= 1"):
        limit_threads(0)


def test_plain_log_labels_use_1_2_5_steps_on_short_ranges():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lib.common import plain_log_labels

    fig, ax = plt.subplots()
    ax.loglog([0.1, 1.0], [1.0, 1e6])
    plain_log_labels(ax)
    fig.canvas.draw()
    xt = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    yt = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert "0.2" in xt and "0.5" in xt  # 1 decade: 1-2-5 steps, plain text
    assert "1000" in yt and "2000" not in yt  # 6 decades: powers of ten only
    plt.close(fig)


def test_pow10_log_axis_labels_powers_of_ten_with_superscripts():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lib.common.figures import pow10_label, pow10_log_axis

    assert [pow10_label(v) for v in (1e-8, 1.0, 10.0, 100.0, 2e3, 0.0, -1.0)] == \
        ["10\u207b\u2078", "1", "10", "10\u00b2", "", "", ""]
    fig, ax = plt.subplots()
    ax.semilogy([0, 1], [1e-12, 1.0])
    pow10_log_axis(ax.yaxis, numticks=4)
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert labels and all(t == "1" or t.startswith("10") for t in labels) and "$" not in "".join(labels)
    assert len(labels) < 13 and len(ax.yaxis.get_minor_locator()()) == 0  # fewer labels than decades, no minor ticks
    plt.close(fig)


def test_ppo_clip_loss_is_the_clipped_surrogate():
    import torch

    from lib.common.policy_gradient import ppo_clip_loss

    ratio = torch.tensor([1.5, 0.5, 1.0])
    adv = torch.tensor([1.0, -1.0, 2.0])
    logp_old = torch.zeros(3)
    loss = ppo_clip_loss(torch.log(ratio), logp_old, adv, clip=0.2)
    # per sample max(-A r, -A clip(r, 0.8, 1.2)): -1.2, 0.8, -2.0
    assert abs(float(loss) - (-1.2 + 0.8 - 2.0) / 3) < 1e-6


def test_update_provenance_merges_and_keeps_other_records(tmp_path):
    import json

    from lib.common import update_provenance

    p = update_provenance(tmp_path, {"b.npz": {"sha256": "1", "recipe": {"z": 1, "a": 2}}})
    update_provenance(tmp_path, {"a.npz": {"sha256": "2"}})
    update_provenance(tmp_path, {"b.npz": {"sha256": "3"}})
    text = p.read_text()
    assert json.loads(text) == {"a.npz": {"sha256": "2"}, "b.npz": {"sha256": "3"}}
    assert text.endswith("}\n") and text.index('"a.npz"') < text.index('"b.npz"')


def test_map_jobs_in_worker_processes_equals_in_process():
    """The shared job pool returns fn(item) in item order, with one worker (in process) and with two processes."""
    import operator

    from lib.common.parallel import map_jobs

    items = [3, -1, 7, 0, 2]
    serial = list(map_jobs(operator.neg, items, 1))
    assert serial == [-3, 1, -7, 0, -2]
    assert list(map_jobs(operator.neg, items, 2, preload=["operator"])) == serial
    assert list(map_jobs(operator.neg, [], 2)) == []


def test_limit_threads_caps_torch_first_imported_inside_the_block():
    """A function that imports torch lazily under limit_threads runs torch on n threads, and torch gets its own
    default back afterwards (checked in a fresh interpreter, where torch is not loaded yet)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from lib.common import limit_threads\n"
        "assert 'torch' not in sys.modules\n"
        "with limit_threads(1):\n"
        "    import torch\n"
        "    inside = torch.get_num_threads()\n"
        "after = torch.get_num_threads()\n"
        "print(inside, after, any(type(f).__name__ == '_CapTorchOnImport' for f in sys.meta_path))\n"
    )
    env = {**__import__("os").environ, "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["1", "2", "False"], out.stdout
