"""Generated scenes with exact object masks: the offline stand-in for PASCAL VOC / COCO (region retrieval) and
RefCOCO (referring expressions).

A scene is an ``S x S`` RGB canvas with a noisy, tinted background and 1-3 non-overlapping objects, each one of
5 shapes x 4 colours = 20 classes, 8-14 px wide (7-9 px in the context variant). Each object comes with its exact
binary mask and its box. The *context* variant places two identical objects on either side of a third one (the
anchor): "the red circle left of the blue square" names one twin, and only its relation to the anchor tells the
two apart (a crop of the twin alone cannot).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import ndimage

COLORS = ("red", "green", "blue", "yellow")
SHAPES = ("circle", "square", "triangle", "cross", "ring")
RGB = {"red": (0.90, 0.15, 0.15), "green": (0.15, 0.80, 0.20), "blue": (0.20, 0.30, 0.95),
       "yellow": (0.95, 0.90, 0.15)}
CLASSES = tuple(f"{c} {s}" for c in COLORS for s in SHAPES)  # class k = color * 5 + shape
SPECIAL = ("<pad>", "<bos>", "<unk>", "<eos>")
WORDS = SPECIAL + ("a", "photo", "of", "and", "the", "left", "right") + COLORS + SHAPES
PIXEL_MEAN, PIXEL_STD = 0.5, 0.25  # images are stored normalised: (rgb - 0.5) / 0.25


def class_prompt(k: int) -> str:
    return f"a photo of a {CLASSES[k]}"


def shape_mask(shape: str, s: int) -> np.ndarray:
    """The exact ``s x s`` binary mask of a shape (pixel centres inside the figure)."""
    y, x = np.mgrid[0:s, 0:s] + 0.5
    c = s / 2.0
    r = np.hypot(x - c, y - c)
    if shape == "circle":
        m = r <= 0.48 * s
    elif shape == "square":
        m = (np.abs(x - c) <= 0.42 * s) & (np.abs(y - c) <= 0.42 * s)
    elif shape == "triangle":  # apex up, base at the bottom
        top, bot = 0.06 * s, 0.94 * s
        half = 0.48 * s * (y - top) / (bot - top)
        m = (y >= top) & (y <= bot) & (np.abs(x - c) <= half)
    elif shape == "cross":
        arm = 0.18 * s
        m = ((np.abs(x - c) <= arm) | (np.abs(y - c) <= arm)) & (np.abs(x - c) <= 0.48 * s) & (np.abs(y - c) <= 0.48 * s)
    elif shape == "ring":
        m = (r <= 0.48 * s) & (r >= 0.26 * s)
    else:
        raise ValueError(f"unknown shape {shape!r}; known: {SHAPES}")
    return m


_TEMPLATES: dict = {}


def _template(shape: str, s: int) -> np.ndarray:
    key = (shape, s)
    if key not in _TEMPLATES:
        _TEMPLATES[key] = shape_mask(shape, s)
    return _TEMPLATES[key]


@dataclass
class Scenes:
    """A set of scenes. ``images``: float32 [n, 3, S, S], normalised; ``objects[i]``: list of dicts with ``cls``
    (0-19), ``mask`` (bool [S, S]), ``box`` (x0, y0, x1, y1, exclusive ends); ``captions[i]``: the training caption;
    ``refs[i]``: per object its referring expression (context variant) or None."""

    images: np.ndarray
    objects: list
    captions: list
    refs: list = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.images)

    def masks(self):
        """Flattened per-object view: ``(image index [M], class [M], masks bool [M, S, S])``."""
        idx, cls, masks = [], [], []
        for i, objs in enumerate(self.objects):
            for o in objs:
                idx.append(i)
                cls.append(o["cls"])
                masks.append(o["mask"])
        S = self.images.shape[-1]
        return (np.asarray(idx, dtype=np.int64), np.asarray(cls, dtype=np.int64),
                np.asarray(masks, dtype=bool).reshape(-1, S, S))


def _background(rng: np.random.Generator, n: int, S: int) -> np.ndarray:
    base = rng.uniform(0.25, 0.55, size=(n, 1, 1, 1)) + rng.uniform(-0.06, 0.06, size=(n, 3, 1, 1))
    coarse = rng.normal(0.0, 0.05, size=(n, 3, S // 8, S // 8)).repeat(8, axis=2).repeat(8, axis=3)
    fine = rng.normal(0.0, 0.04, size=(n, 3, S, S))
    return base + ndimage.uniform_filter(coarse, size=(1, 1, 5, 5)) + fine


def _paint(img: np.ndarray, rng: np.random.Generator, cls: int, x0: int, y0: int, s: int, S: int) -> dict:
    color, shape = COLORS[cls // len(SHAPES)], SHAPES[cls % len(SHAPES)]
    m = np.zeros((S, S), dtype=bool)
    m[y0:y0 + s, x0:x0 + s] = _template(shape, s)
    rgb = np.asarray(RGB[color]) + rng.uniform(-0.05, 0.05, size=3)
    img[:, m] = rgb[:, None] + rng.normal(0.0, 0.02, size=(3, int(m.sum())))
    return {"cls": int(cls), "mask": m, "box": (int(x0), int(y0), int(x0 + s), int(y0 + s))}


def _free(boxes, x0, y0, s, gap=1) -> bool:
    return all(x0 + s + gap <= b[0] or b[2] + gap <= x0 or y0 + s + gap <= b[1] or b[3] + gap <= y0 for b in boxes)


def _list_caption(classes, rng) -> str:
    order = rng.permutation(len(classes))
    return "a photo of " + " and ".join(f"a {CLASSES[classes[k]]}" for k in order)


def make_scenes(n: int, rng: np.random.Generator, size: int = 32, n_obj=(1, 3), sizes=(8, 14),
                relational: float = 0.0) -> Scenes:
    """``n`` plain scenes with 1-3 non-overlapping objects of distinct classes; ``relational`` is the share of
    2-object scenes (objects at least 4 px apart horizontally) captioned "the X left of the Y" / "the Y right of the X"
    instead of the list caption "a photo of a X and a Y"."""
    S = int(size)
    images = _background(rng, n, S)
    objects, captions = [], []
    for i in range(n):
        k = int(rng.integers(n_obj[0], n_obj[1] + 1))
        classes = rng.choice(len(CLASSES), size=k, replace=False)
        objs, boxes = [], []
        for c in classes:
            for _ in range(100):
                s = int(rng.integers(sizes[0], sizes[1] + 1))
                x0, y0 = (int(v) for v in rng.integers(0, S - s + 1, size=2))
                if _free(boxes, x0, y0, s):
                    boxes.append((x0, y0, x0 + s, y0 + s))
                    objs.append(_paint(images[i], rng, int(c), x0, y0, s, S))
                    break
        objects.append(objs)
        cls = [o["cls"] for o in objs]
        cx = [(o["box"][0] + o["box"][2]) / 2 for o in objs]
        if len(objs) == 2 and abs(cx[0] - cx[1]) >= 4 and rng.random() < relational:
            a, b = (0, 1) if rng.random() < 0.5 else (1, 0)
            rel = "left" if cx[a] < cx[b] else "right"
            captions.append(f"the {CLASSES[cls[a]]} {rel} of the {CLASSES[cls[b]]}")
        else:
            captions.append(_list_caption(cls, rng))
    images = ((np.clip(images, 0, 1) - PIXEL_MEAN) / PIXEL_STD).astype(np.float32)
    return Scenes(images, objects, captions, [None] * n)


def referring_expression(twin_cls: int, anchor_cls: int, side: str) -> str:
    return f"the {CLASSES[twin_cls]} {side} of the {CLASSES[anchor_cls]}"


def make_context_scenes(n: int, rng: np.random.Generator, size: int = 32, sizes=(7, 9)) -> Scenes:
    """``n`` context scenes: an anchor object near the middle and two identical twins, one on its left and one on
    its right (any heights). ``objects[i]`` = [left twin, right twin, anchor]; ``refs[i]`` = the expressions of the
    two twins ("the T left of the A", "the T right of the A") and None for the anchor."""
    S = int(size)
    images = _background(rng, n, S)
    objects, captions, refs = [], [], []
    for i in range(n):
        t, a = (int(v) for v in rng.choice(len(CLASSES), size=2, replace=False))
        sa, st = int(rng.integers(sizes[0], sizes[1] + 1)), int(rng.integers(sizes[0], sizes[1] + 1))
        ax = int(rng.integers(S // 2 - sa // 2 - 2, S // 2 - sa // 2 + 3))
        ay = int(rng.integers(0, S - sa + 1))
        lx = int(rng.integers(0, max(1, ax - st - 1)))
        rx = int(rng.integers(min(ax + sa + 2, S - st), S - st + 1))
        ly, ry = (int(v) for v in rng.integers(0, S - st + 1, size=2))
        anchor = _paint(images[i], rng, a, ax, ay, sa, S)
        left = _paint(images[i], rng, t, lx, ly, st, S)
        right = _paint(images[i], rng, t, rx, ry, st, S)
        objects.append([left, right, anchor])
        captions.append(_list_caption([t, a, t], rng))
        refs.append([referring_expression(t, a, "left"), referring_expression(t, a, "right"), None])
    images = ((np.clip(images, 0, 1) - PIXEL_MEAN) / PIXEL_STD).astype(np.float32)
    return Scenes(images, objects, captions, refs)


# ---- mask variants (paper: mask-quality ablation) -------------------------------------------------------------

def erode(masks: np.ndarray, px: int = 1) -> np.ndarray:
    """Binary erosion of each [S, S] mask by ``px`` pixels (3x3 cross steps); a mask that would vanish keeps its
    one-step-less erosion (never empty)."""
    out = np.empty_like(masks)
    for k, m in enumerate(masks):
        e = m
        for _ in range(px):
            nxt = ndimage.binary_erosion(e)
            if not nxt.any():
                break
            e = nxt
        out[k] = e
    return out


def dilate(masks: np.ndarray, px: int = 2) -> np.ndarray:
    return np.stack([ndimage.binary_dilation(m, iterations=px) for m in masks]) if len(masks) else masks.copy()


def box_masks(masks: np.ndarray) -> np.ndarray:
    """Each mask replaced by its tight bounding box."""
    out = np.zeros_like(masks)
    for k, m in enumerate(masks):
        ys, xs = np.nonzero(m)
        if len(ys):
            out[k, ys.min():ys.max() + 1, xs.min():xs.max() + 1] = True
    return out


def random_masks(masks: np.ndarray, rng: np.random.Generator, max_overlap: float = 0.2) -> np.ndarray:
    """Control: each mask moved cyclically by a random offset that leaves at most ``max_overlap`` of it on its
    original pixels (the best of 50 draws otherwise): same shape and area, mostly other pixels of the image."""
    out = np.empty_like(masks)
    S = masks.shape[-1]
    for k, m in enumerate(masks):
        best, best_ov = m, 2.0
        for _ in range(50):
            r = np.roll(m, tuple(int(v) for v in rng.integers(0, S, size=2)), axis=(0, 1))
            ov = (r & m).sum() / max(1, m.sum())
            if ov < best_ov:
                best, best_ov = r, ov
            if ov <= max_overlap:
                break
        out[k] = best
    return out
