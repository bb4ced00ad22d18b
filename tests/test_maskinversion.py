"""Unit tests of lib.maskinversion: scenes, masks, the LeGrad maps (against transformers' own attention graph), the
gradient decomposition, MaskInversion's loop, the baselines, the VOC reader and the shipped checkpoint."""
from __future__ import annotations

import json
import shutil
import time
from collections import Counter

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lib.maskinversion as paper
from lib.common import data_dir, limit_threads
from lib.common.userfiles import UserFileError
from lib.maskinversion import baselines as bl
from lib.maskinversion import legrad, scenes
from lib.maskinversion.inversion import dice_loss, mask_inversion
from lib.maskinversion.model import WordTokenizer, make_tiny_clip, tiny_clip
from lib.maskinversion.voc import read_voc, write_fixture


@pytest.fixture(scope="module")
def clip():
    torch.manual_seed(0)
    return tiny_clip(make_tiny_clip("small", seed=3))


@pytest.fixture(scope="module")
def sc():
    return scenes.make_scenes(12, np.random.default_rng(5), size=32)


# ---- scenes and masks -------------------------------------------------------------------------------------------

def test_scene_masks_and_captions_exact(sc):
    px = sc.images * scenes.PIXEL_STD + scenes.PIXEL_MEAN
    for i, objs in enumerate(sc.objects):
        assert 1 <= len(objs) <= 3
        union = np.zeros((32, 32), dtype=int)
        for o in objs:
            x0, y0, x1, y1 = o["box"]
            shape = scenes.SHAPES[o["cls"] % 5]
            expect = np.zeros((32, 32), dtype=bool)
            expect[y0:y1, x0:x1] = scenes.shape_mask(shape, x1 - x0)
            assert np.array_equal(o["mask"], expect)
            union += o["mask"]
            rgb = np.asarray(scenes.RGB[scenes.COLORS[o["cls"] // 5]])
            inside = px[i][:, o["mask"]].mean(1)
            assert np.abs(inside - rgb).max() < 0.08  # the object's colour is painted exactly on its mask
        assert union.max() == 1  # objects never overlap
        words = sc.captions[i].replace("a photo of ", "").split(" and ")
        assert Counter(w.removeprefix("a ") for w in words) == Counter(scenes.CLASSES[o["cls"]] for o in objs)


def test_context_scenes_relations_and_expressions():
    ctx = scenes.make_context_scenes(20, np.random.default_rng(1))
    for objs, refs in zip(ctx.objects, ctx.refs):
        left, right, anchor = objs
        assert left["cls"] == right["cls"] != anchor["cls"]
        assert left["box"][2] <= anchor["box"][0] and anchor["box"][2] <= right["box"][0]
        t, a = scenes.CLASSES[left["cls"]], scenes.CLASSES[anchor["cls"]]
        assert refs == [f"the {t} left of the {a}", f"the {t} right of the {a}", None]
        assert not (left["mask"] & right["mask"]).any() and not (left["mask"] & anchor["mask"]).any()


def test_mask_variants_nest(sc):
    _, _, m = sc.masks()
    er, di, bx = scenes.erode(m, 1), scenes.dilate(m, 2), scenes.box_masks(m)
    assert (er <= m).all() and (m <= di).all() and (m <= bx).all()
    assert (scenes.box_masks(di) >= bx).all() and (di <= scenes.box_masks(di)).all()
    assert (er.sum((1, 2)) > 0).all() and (er.sum() < m.sum() < di.sum())
    rnd = scenes.random_masks(m, np.random.default_rng(0))
    assert np.array_equal(rnd.sum((1, 2)), m.sum((1, 2)))
    assert ((rnd & m).sum((1, 2)) <= 0.2 * m.sum((1, 2))).mean() > 0.9


def test_tokenizer_and_pooling():
    tok = WordTokenizer()
    ids, att = tok(["a photo of a red circle", "the blue ring left of the green cross", "a photo of a dog"])
    assert ids[0, 0] == tok.bos and (ids == tok.eos).sum(1).tolist() == [1, 1, 1]
    assert ids[2, 5] == tok.unk and att.sum(1).tolist() == [8, 10, 7]


# ---- LeGrad and the decomposition ---------------------------------------------------------------------------------

def test_eager_attention_rows_sum_to_one_and_stay_in_graph(clip, sc):
    px = torch.from_numpy(sc.images[:3])
    out = clip.model.vision_model(pixel_values=px, output_attentions=True, output_hidden_states=True)
    A = out.attentions[-1]
    assert A.grad_fn is not None  # in the graph: a gradient can reach it
    assert torch.allclose(A.sum(-1), torch.ones_like(A.sum(-1)), atol=1e-5)
    x = legrad.last_block_input(clip.model, px)
    A2, v = legrad.last_block_attention(clip.model, x)
    assert torch.allclose(A, A2, atol=1e-6)
    assert torch.allclose(legrad.last_block_output(clip.model, x, A2, v), out.last_hidden_state, atol=1e-5)


def test_legrad_map_matches_autograd_through_transformers(clip, sc):
    """The naive map equals ReLU(ds/dA) taken through transformers' own eager attention tensor."""
    px = torch.from_numpy(sc.images[:2])
    e = torch.randn(2, clip.model.config.projection_dim, generator=torch.Generator().manual_seed(0))
    ours = legrad.legrad_maps(clip.model, px, e, decomposed=False)
    out = clip.model.vision_model(pixel_values=px, output_attentions=True)
    A = out.attentions[-1]
    f = F.normalize(clip.model.visual_projection(clip.model.vision_model.post_layernorm(out.last_hidden_state.mean(1))), dim=-1)
    (G,) = torch.autograd.grad((F.normalize(e, dim=-1) * f).sum(), A)
    R = torch.relu(G).mean(dim=(1, 2))[:, 1:]
    ref = legrad.relevance_to_map(R, clip.grid, clip.patch_size)
    assert torch.allclose(ours, ref, atol=1e-5)


def test_decomposition_equals_double_backprop(clip, sc):
    px = torch.from_numpy(sc.images[:4])
    idx = np.array([0, 0, 1, 2, 3, 3, 3])
    e = torch.randn(len(idx), clip.model.config.projection_dim, generator=torch.Generator().manual_seed(1))
    a = legrad.legrad_maps(clip.model, px, e, idx, decomposed=True)
    b = legrad.legrad_maps(clip.model, px, e, idx, decomposed=False)
    assert a.shape == (7, 32, 32) and float((a - b).abs().max()) < 1e-5
    assert float(a.amin((1, 2)).abs().max()) < 1e-6 and float((a.amax((1, 2)) - 1).abs().max()) < 1e-5


def test_factored_jacobian_equals_jacrev_over_attention(clip, sc):
    """The stored J = (df/do) v^T equals df/dA taken directly by jacrev over the attention probabilities."""
    from torch.func import jacrev

    px = torch.from_numpy(sc.images[:2])
    state = legrad.ImageState(clip.model, px)
    J = legrad.attention_jacobian(state, chunk=1)
    for b in range(2):
        ref = jacrev(lambda A1: legrad.f_of_attention(clip.model, state.x[b:b + 1], A1[None], state.v[b:b + 1])[0])(
            state.A[b])
        assert J.shape[1:] == ref.shape
        assert torch.allclose(J.full()[b], ref, atol=1e-7, rtol=1e-4)
    assert torch.equal(J[[1]].full()[0], J.full()[1])


def test_dice_loss_closed_form():
    m = torch.zeros(2, 4, 4)
    m[:, :2, :2] = 1
    assert torch.allclose(dice_loss(m, m), torch.zeros(2), atol=1e-7)
    assert torch.allclose(dice_loss(torch.zeros(2, 4, 4), m), torch.full((2,), 1 - 1 / 5))
    E = torch.full((2, 4, 4), 0.5)
    assert torch.allclose(dice_loss(E, m), torch.full((2,), 1 - (2 * 2 + 1) / (8 + 4 + 1)))


def test_inversion_batched_equals_separate_and_lowers_loss(clip, sc):
    idx, _, masks = sc.masks()
    px = torch.from_numpy(sc.images)
    with limit_threads(1):
        both = mask_inversion(clip.model, px, idx[:4], masks[:4], steps=5)
        one = mask_inversion(clip.model, px, idx[2:3], masks[2:3], steps=5)
        naive = mask_inversion(clip.model, px, idx[:4], masks[:4], steps=5, decomposed=False)
    assert torch.allclose(both.let[2], one.let[0], rtol=1e-4, atol=1e-4)  # Adam is elementwise: masks independent
    assert np.allclose(both.dice, naive.dice, atol=1e-4)
    assert (both.loss[-1] < both.loss[0]).all()
    z0 = clip.image_embeddings(px)[torch.as_tensor(idx[:4])]
    reg = mask_inversion(clip.model, px, idx[:4], masks[:4], steps=5, alpha=50.0)
    cos = lambda a: F.cosine_similarity(a, z0, dim=-1)  # noqa: E731
    assert (cos(reg.let) > cos(both.let)).all()  # the context term keeps the token near z0


# ---- baselines --------------------------------------------------------------------------------------------------

def test_crop_with_all_ones_mask_is_global(clip, sc):
    px = torch.from_numpy(sc.images[:3])
    ones = np.ones((3, 32, 32), dtype=bool)
    idx = np.arange(3)
    g = bl.global_embed(clip, px, idx)
    assert torch.allclose(bl.masked_crop_embed(clip, px, idx, ones, "inplace"), g, atol=1e-5)
    assert torch.equal(bl.masked_images(px, idx, ones, "crop", margin=0.0), px)  # the box is the whole image
    assert torch.allclose(bl.masked_blur_embed(clip, px, idx, ones, 2.0), g, atol=1e-5)
    w = bl.patch_weights(ones, clip.grid)
    assert torch.allclose(w, torch.ones_like(w))


def test_masked_images_blank_outside(sc):
    idx, _, masks = sc.masks()
    px = torch.from_numpy(sc.images)
    out = bl.masked_images(px, idx, masks, "inplace")
    assert (out[:, :, ~torch.as_tensor(masks[0])][0] == 0).all()
    assert torch.equal(out[0][:, torch.as_tensor(masks[0])], px[idx[0]][:, torch.as_tensor(masks[0])])


# ---- VOC reader -------------------------------------------------------------------------------------------------

def test_voc_fixture_reads_and_regenerates(tmp_path):
    shipped = data_dir("maskinversion") / "voc_fixture"
    r = read_voc(shipped)
    sc = scenes.make_scenes(3, np.random.default_rng(0), size=32)
    assert len(r.images) == 3 and len(r.cls) == sum(len(o) for o in sc.objects)
    assert r.cls.tolist() == [o["cls"] for objs in sc.objects for o in objs]
    first = sc.objects[0][0]["mask"]
    from scipy import ndimage

    assert np.array_equal(r.masks[0], first & ndimage.binary_erosion(first))  # the void boundary is not the object
    assert np.array_equal(r.masks[1], sc.objects[0][1]["mask"])
    write_fixture(tmp_path / "voc")
    for f in sorted(p for p in shipped.rglob("*") if p.is_file()):
        assert (tmp_path / "voc" / f.relative_to(shipped)).read_bytes() == f.read_bytes(), f


def _broken(tmp_path, how):
    root = tmp_path / how
    shutil.copytree(data_dir("maskinversion") / "voc_fixture", root)
    lst = root / "ImageSets" / "Segmentation" / "val.txt"
    if how == "missing_jpeg":
        (root / "JPEGImages" / "2007_000001.jpg").unlink()
    elif how == "bad_class":
        from PIL import Image

        src = Image.open(root / "SegmentationClass" / "2007_000000.png")
        a = np.asarray(src).copy()
        a[0, 0] = 77
        im = Image.fromarray(a, mode="P")
        im.putpalette(src.getpalette())
        im.save(root / "SegmentationClass" / "2007_000000.png")
    elif how == "rgb_png":
        from PIL import Image

        Image.new("RGB", (32, 32)).save(root / "SegmentationObject" / "2007_000002.png")
    elif how == "wrong_size":
        from PIL import Image

        Image.new("P", (16, 16)).save(root / "SegmentationObject" / "2007_000002.png")
    elif how == "two_fields":
        lst.write_text("2007_000000 1\n")
    elif how == "no_list":
        lst.unlink()
    elif how == "no_folder":
        shutil.rmtree(root / "SegmentationClass")
    return root


@pytest.mark.parametrize("how,words", [("missing_jpeg", "no JPEGImages/2007_000001.jpg"), ("bad_class", "77"),
                                       ("rgb_png", "not a palette"), ("wrong_size", "has size"),
                                       ("two_fields", "is not one image id"), ("no_list", "val.txt"),
                                       ("no_folder", "SegmentationClass")])
def test_voc_malformed_refused(tmp_path, how, words):
    with pytest.raises(UserFileError) as err:
        read_voc(_broken(tmp_path, how))
    assert "data_path" in str(err.value) and words in str(err.value)


def test_config_refuses_bad_parameters(tmp_path):
    with pytest.raises(ValueError, match="steps"):
        paper.config(steps=0, verbose=False)
    with pytest.raises(ValueError, match="alphas"):
        paper.config(alphas=[], verbose=False)
    with pytest.raises(ValueError, match="model_name"):
        paper.config(model_name="  ", verbose=False)
    with pytest.raises(ValueError, match="data_path"):
        paper.config(data_path=str(_broken(tmp_path, "missing_jpeg")), verbose=False)
    cfg = paper.config(verbose=False, out_dir=str(tmp_path / "out"))
    assert cfg.pretrained and cfg.n_test == 75 and cfg.steps == 10


def test_hub_model_fails_fast_offline():
    from lib.maskinversion.model import load_hub_clip

    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match="model_name"):
        load_hub_clip("openai/clip-vit-base-patch16-not-cached-here")
    assert time.perf_counter() - t0 < 20


# ---- the shipped checkpoint -------------------------------------------------------------------------------------

def test_checkpoint_small_loads_and_matches_recipe():
    from lib.maskinversion.model import load_checkpoint
    from lib.maskinversion.train_checkpoint import RECIPE, checkpoint_path

    f = checkpoint_path()
    assert f.stat().st_size <= 2 * 2**20
    model, recipe = load_checkpoint(f, "base")
    assert recipe == RECIPE
    prov = json.loads((f.parent / "provenance.json").read_text())["tiny_clip.npz"]
    import hashlib

    assert prov["sha256"] == hashlib.sha256(f.read_bytes()).hexdigest()
    assert prov["final_loss"]["base"] < 0.7 * prov["loss_every_100"]["base"][0]  # it was trained


def test_training_recipe_reproduces_first_loss():
    """Re-running the script's recipe (data, tokenizer, initialisation, first batch) gives the stored first loss."""
    from lib.maskinversion.model import train_clip
    from lib.maskinversion.train_checkpoint import RECIPE, SEED, checkpoint_path

    prov = json.loads((checkpoint_path().parent / "provenance.json").read_text())["tiny_clip.npz"]
    m = make_tiny_clip("base", image_size=RECIPE["image_size"], patch_size=RECIPE["patch_size"], seed=SEED)
    with limit_threads(1):
        log = train_clip(m, 1, SEED, n_train=RECIPE["n_train"], batch=RECIPE["batch"], lr=RECIPE["lr"])
    assert np.isclose(log["losses"][0], prov["loss_every_100"]["base"][0], rtol=2e-3)
