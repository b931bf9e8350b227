"""Reference images for tests/formats/image_decode_test.cc.

usage: image_decode_reference.py OUT_DIR

Makes JPEG and PNG files with PIL from deterministic synthetic pixels and writes PIL's
decodes next to them (PIL 9 decodes JPEG with the system libjpeg-turbo: ISLOW IDCT,
fancy upsampling). For each case NAME it writes:
  NAME.jpg / NAME.png   the encoded file
  NAME.rgb.npy          PIL's decode as uint8 RGB [h, w, 3]
  NAME.gray.npy         PIL's decode as uint8 gray [h, w, 1]: for JPEG, libjpeg's own
                        grayscale output (Image.draft("L"), the Y channel) except CMYK,
                        which goes through RGB; for PNG, Image.convert("L") (ITU-R 601)
  NAME.sK.npy           (some JPEGs) PIL's DCT-scaled decode at 1/K (Image.draft), RGB
and lists the cases, one "NAME KIND" line each, in OUT_DIR/cases.txt.
16-bit PNGs: the reference keeps the high byte of each sample (PIL's own "RGB;16B"
reading; for 16-bit gray, which PIL opens as I;16, the script shifts right by 8).
"""
import os
import struct
import sys
import zlib

import numpy as np
from PIL import Image


def pixels(h, w, seed, smooth=False):
    """Smooth gradients and waves plus (unless smooth) some deterministic noise."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 128 + 100 * np.sin(x / (w / 3.0 + 1) + seed) * np.cos(y / (h / 2.0 + 1))
    g = 255.0 * (x + y) / (h + w)
    b = 128 + 90 * np.cos((x - y) / 9.0 + seed)
    img = np.stack([r, g, b], axis=-1)
    if not smooth:
        rng = np.random.RandomState(seed)
        img += rng.randint(-25, 26, size=img.shape)
        img[h // 3: h // 3 + 4, :, :] = 250  # a sharp edge
    return np.clip(img, 0, 255).astype(np.uint8)


def save_npy(out, name, suffix, arr):
    if arr.ndim == 2:
        arr = arr[:, :, None]
    np.save(os.path.join(out, f"{name}.{suffix}.npy"), np.ascontiguousarray(arr, np.uint8))


def jpeg_case(out, cases, name, h, w, seed, mode="RGB", scales=(), smooth=False, **save):
    arr = pixels(h, w, seed, smooth)
    if mode == "L":
        im = Image.fromarray(arr[:, :, 1])
    elif mode == "CMYK":
        im = Image.fromarray(arr).convert("CMYK")
    else:
        im = Image.fromarray(arr)
    path = os.path.join(out, name + ".jpg")
    im.save(path, "JPEG", **save)
    with Image.open(path) as d:
        save_npy(out, name, "rgb", np.asarray(d.convert("RGB")))
    with Image.open(path) as d:
        if d.mode == "RGB":
            d.draft("L", None)  # libjpeg's grayscale output
            assert d.mode == "L", d.mode
            save_npy(out, name, "gray", np.asarray(d))
        else:
            save_npy(out, name, "gray", np.asarray(d.convert("L")))
    for k in scales:
        with Image.open(path) as d:
            d.draft("RGB", (w // k, h // k))
            assert d.size == ((w + k - 1) // k, (h + k - 1) // k), (d.size, k)
            save_npy(out, name, f"s{k}", np.asarray(d.convert("RGB")))
    cases.append((name, "jpeg"))


def png_chunk(kind, data):
    return (struct.pack(">I", len(data)) + kind + data +
            struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def write_png16_rgb(path, arr16):
    """A 16-bit RGB PNG (PIL cannot write one)."""
    h, w, _ = arr16.shape
    raw = b"".join(b"\x00" + arr16[i].astype(">u2").tobytes() for i in range(h))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 2, 0, 0, 0)))
        f.write(png_chunk(b"IDAT", zlib.compress(raw, 6)))
        f.write(png_chunk(b"IEND", b""))


def png_case(out, cases, name, im=None, path16=None):
    path = os.path.join(out, name + ".png")
    if im is not None:
        im.save(path, "PNG")
    with Image.open(path) as d:
        d.load()
        if d.mode in ("I;16", "I;16B", "I"):
            g = (np.asarray(d).astype(np.uint32) >> 8).astype(np.uint8)
            save_npy(out, name, "gray", g)
            save_npy(out, name, "rgb", np.stack([g, g, g], axis=-1))
        else:
            save_npy(out, name, "rgb", np.asarray(d.convert("RGB")))
            save_npy(out, name, "gray", np.asarray(d.convert("L")))
    cases.append((name, "png"))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    cases = []
    # JPEG: sizes (odd ones included), gray and color, 4:2:0 / 4:2:2 / 4:4:4, q75..q95,
    # progressive, CMYK.
    jpeg_case(out, cases, "rgb_64x48_q75_420", 48, 64, 1, quality=75, subsampling=2,
              scales=(2, 4, 8))
    jpeg_case(out, cases, "rgb_257x131_q95_444", 131, 257, 2, quality=95, subsampling=0,
              scales=(2, 4, 8))
    jpeg_case(out, cases, "rgb_257x131_q75_420", 131, 257, 3, quality=75, subsampling=2,
              scales=(2, 4, 8))
    jpeg_case(out, cases, "rgb_131x257_q90_422", 257, 131, 4, quality=90, subsampling=1)
    jpeg_case(out, cases, "gray_257x131_q90", 131, 257, 5, mode="L", quality=90,
              scales=(2, 8))
    jpeg_case(out, cases, "rgb_300x203_q85_420_progressive", 203, 300, 6, quality=85,
              subsampling=2, progressive=True, scales=(2, 4))
    jpeg_case(out, cases, "rgb_17x9_q75_420", 9, 17, 7, quality=75, subsampling=2)
    jpeg_case(out, cases, "cmyk_65x33_q90", 33, 65, 8, mode="CMYK", quality=90)
    jpeg_case(out, cases, "rgb_500x375_q90_420_smooth", 375, 500, 9, quality=90,
              subsampling=2, smooth=True)
    # PNG: 8-bit RGB, RGBA, gray, gray+alpha, palette (with transparency), 1-bit, 16-bit.
    base = pixels(31, 57, 10)
    png_case(out, cases, "png_rgb", Image.fromarray(base))
    rgba = np.concatenate([base, base[:, :, :1]], axis=-1)
    png_case(out, cases, "png_rgba", Image.fromarray(rgba, "RGBA"))
    png_case(out, cases, "png_gray", Image.fromarray(base[:, :, 0]))
    png_case(out, cases, "png_gray_alpha", Image.fromarray(base[:, :, :2].copy(), "LA"))
    pal = Image.fromarray(base).quantize(colors=37)
    png_case(out, cases, "png_palette", pal)
    pal_t = pal.copy()
    pal_t.info["transparency"] = 3
    png_case(out, cases, "png_palette_trns", pal_t)
    png_case(out, cases, "png_1bit", Image.fromarray(base[:, :, 0] > 128))
    g16 = (base[:, :, 0].astype(np.uint16) * 257 + np.arange(57, dtype=np.uint16)) \
        .astype(np.uint16)
    png_case(out, cases, "png_gray16", Image.fromarray(g16, "I;16"))
    rgb16 = base.astype(np.uint16) * 256 + (base[::-1].astype(np.uint16))
    write_png16_rgb(os.path.join(out, "png_rgb16.png"), rgb16)
    png_case(out, cases, "png_rgb16")
    with open(os.path.join(out, "cases.txt"), "w") as f:
        for name, kind in cases:
            f.write(f"{name} {kind}\n")


if __name__ == "__main__":
    main()
