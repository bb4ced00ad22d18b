"""A reader for the PASCAL VOC 2012 segmentation layout (region retrieval on real images, with a real CLIP).

    <root>/JPEGImages/<id>.jpg
    <root>/SegmentationObject/<id>.png     palette PNG: 0 background, 1..K instance ids, 255 void (boundaries)
    <root>/SegmentationClass/<id>.png      palette PNG: 0 background, 1..20 class index, 255 void
    <root>/ImageSets/Segmentation/<split>.txt   one image id per line

Each instance becomes one region with its exact mask and its class (the majority class of its pixels in
SegmentationClass). ``python -m lib.maskinversion.voc --fixture`` writes the tiny fixture
``data/maskinversion/voc_fixture/`` (generated scenes saved in this layout).
"""
from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lib.common.userfiles import UserFileError, check_folder, read_lines

VOC_CLASSES = ("aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow", "diningtable",
               "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa", "train", "tvmonitor")
VOC_EXPECTED = ("a PASCAL VOC 2012 folder: JPEGImages/<id>.jpg, SegmentationObject/<id>.png and "
                "SegmentationClass/<id>.png (palette PNGs, 0 background, 255 void), and "
                "ImageSets/Segmentation/<split>.txt listing one image id per line")
_ID = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")


@dataclass
class VOCRegions:
    images: list  # float32 [H, W, 3] in [0, 1], one per image
    img_idx: np.ndarray  # [M] image of each region
    cls: np.ndarray  # [M] class index 0..19 (VOC order)
    masks: list  # bool [H, W] per region (the size of its image)
    ids: list  # image ids
    class_names: tuple = VOC_CLASSES


def _png(parameter, path: Path, shape=None) -> np.ndarray:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            if im.mode not in ("P", "L"):
                raise UserFileError(parameter, path, f"is a {im.mode} image, not a palette (P) or grey (L) PNG",
                                    expected=VOC_EXPECTED)
            a = np.asarray(im)
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        if isinstance(exc, UserFileError):
            raise
        raise UserFileError(parameter, path, f"is not a readable PNG ({exc})", expected=VOC_EXPECTED) from exc
    if shape is not None and a.shape != shape:
        raise UserFileError(parameter, path, f"has size {a.shape[::-1]}, but its JPEG has {shape[::-1]}",
                            expected=VOC_EXPECTED)
    return a


def read_voc(path, split: str = "val", max_images: int = None, parameter: str = "data_path") -> VOCRegions:
    """All instance regions of the images listed in ``ImageSets/Segmentation/<split>.txt``."""
    from PIL import Image, UnidentifiedImageError

    root = check_folder(parameter, path, expected=VOC_EXPECTED)
    lst = root / "ImageSets" / "Segmentation" / f"{split}.txt"
    for sub in ("JPEGImages", "SegmentationObject", "SegmentationClass"):
        if not (root / sub).is_dir():
            raise UserFileError(parameter, root, f"has no {sub}/ folder", expected=VOC_EXPECTED)
    if not lst.is_file():
        raise UserFileError(parameter, root, f"has no ImageSets/Segmentation/{split}.txt", expected=VOC_EXPECTED)
    lines = read_lines(parameter, lst, expected=VOC_EXPECTED)
    if not lines:
        raise UserFileError(parameter, lst, "lists no image id", expected=VOC_EXPECTED)
    images, img_idx, cls, masks, ids = [], [], [], [], []
    for item in lines:
        no, text = item if isinstance(item, tuple) else (None, item)
        fields = str(text).split()
        if len(fields) != 1 or not _ID.match(fields[0]):
            raise UserFileError(parameter, lst, f"line {no}: {str(text)[:60]!r} is not one image id (letters, digits, "
                                f"'_' or '-')", expected=VOC_EXPECTED)
        iid = fields[0]
        jpg = root / "JPEGImages" / f"{iid}.jpg"
        if not jpg.is_file():
            raise UserFileError(parameter, lst, f"line {no}: image id {iid!r} has no JPEGImages/{iid}.jpg",
                                expected=VOC_EXPECTED)
        try:
            with Image.open(jpg) as im:
                rgb = np.asarray(im.convert("RGB"), dtype=np.float32) / 255.0
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
            raise UserFileError(parameter, jpg, f"is not a readable JPEG ({exc})", expected=VOC_EXPECTED) from exc
        obj = _png(parameter, root / "SegmentationObject" / f"{iid}.png", rgb.shape[:2])
        sem = _png(parameter, root / "SegmentationClass" / f"{iid}.png", rgb.shape[:2])
        bad = np.setdiff1d(np.unique(sem), np.r_[0:21, 255])
        if len(bad):
            raise UserFileError(parameter, root / "SegmentationClass" / f"{iid}.png",
                                f"holds class values {bad[:5].tolist()} outside 0-20 and 255", expected=VOC_EXPECTED)
        k = len(images)
        for inst in np.unique(obj):
            if inst in (0, 255):
                continue
            m = obj == inst
            c = np.bincount(sem[m][(sem[m] > 0) & (sem[m] < 255)], minlength=21)
            if c.sum() == 0:
                continue
            img_idx.append(k)
            cls.append(int(c.argmax()) - 1)
            masks.append(m)
        images.append(rgb)
        ids.append(iid)
        if max_images is not None and len(images) >= max_images:
            break
    if not masks:
        raise UserFileError(parameter, root, "holds no labelled instance in its SegmentationObject PNGs",
                            expected=VOC_EXPECTED)
    return VOCRegions(images, np.asarray(img_idx), np.asarray(cls), masks, ids)


def write_fixture(folder: Path, n: int = 3, seed: int = 0) -> Path:
    """Three generated scenes written in the VOC layout (classes mapped to VOC indices 1..20 by scene class)."""
    from PIL import Image

    from .scenes import PIXEL_MEAN, PIXEL_STD, make_scenes

    sc = make_scenes(n, np.random.default_rng(seed), size=32)
    folder = Path(folder)
    for sub in ("JPEGImages", "SegmentationObject", "SegmentationClass", "ImageSets/Segmentation"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    palette = (np.arange(256 * 3) * 37 % 256).astype(np.uint8).tolist()
    ids = []
    for i in range(n):
        iid = f"2007_{i:06d}"
        rgb = np.clip(sc.images[i].transpose(1, 2, 0) * PIXEL_STD + PIXEL_MEAN, 0, 1)
        Image.fromarray((rgb * 255).round().astype(np.uint8)).save(folder / "JPEGImages" / f"{iid}.jpg", quality=95)
        obj = np.zeros((32, 32), np.uint8)
        sem = np.zeros((32, 32), np.uint8)
        for k, o in enumerate(sc.objects[i]):
            obj[o["mask"]] = k + 1
            sem[o["mask"]] = o["cls"] + 1
            edge = o["mask"] ^ __import__("scipy").ndimage.binary_erosion(o["mask"])
            obj[edge & (k == 0)] = 255  # a void boundary on the first instance, as VOC draws them
            sem[edge & (k == 0)] = 255
        for name, arr in (("SegmentationObject", obj), ("SegmentationClass", sem)):
            im = Image.fromarray(arr, mode="P")
            im.putpalette(palette)
            im.save(folder / name / f"{iid}.png")
        ids.append(iid)
    (folder / "ImageSets" / "Segmentation" / "val.txt").write_text("\n".join(ids) + "\n")
    return folder


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="write the tiny VOC-layout fixture")
    ap.add_argument("--fixture", action="store_true")
    args = ap.parse_args(argv)
    if args.fixture:
        from lib.common import data_dir

        print(write_fixture(data_dir("maskinversion") / "voc_fixture"))


if __name__ == "__main__":
    main()
