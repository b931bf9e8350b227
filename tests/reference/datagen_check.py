"""Checks a `sluice datagen imagenet` output directory with PIL (tests/datagen/datagen_test.cc).

usage: datagen_check.py OUT_DIR

For every MANIFEST line (path, label, width, height, quality, bytes, hash), independently
of sluice's own decoder:
  * the file exists, has `bytes` bytes and FNV-1a 64 hash `hash`;
  * PIL opens and fully decodes it as a JPEG of `width` x `height`, mode RGB or L;
  * RGB images use 4:2:0 chroma subsampling;
  * the luminance quantization table is libjpeg's standard table scaled for `quality`
    (jpeg_quality_scaling), i.e. the file was encoded at the stated quality;
  * the path is train/<wnid>/<wnid>_<index>.JPEG with wnid = n%08d of the label.
Exits non-zero naming the first mismatch. Prints the number of images checked.
"""
import os
import sys

from PIL import Image, JpegImagePlugin

# libjpeg's jpeg_std_luminance_quant_tbl (natural order).
STD_LUMA = [
    16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55,
    14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62,
    18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
    49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
]


def luma_table(quality):
    scale = 5000 // quality if quality < 50 else 200 - quality * 2
    return [min(max((q * scale + 50) // 100, 1), 255) for q in STD_LUMA]


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def fail(msg):
    print("datagen_check: " + msg)
    sys.exit(1)


def main():
    root = sys.argv[1]
    lines = open(os.path.join(root, "MANIFEST")).read().splitlines()
    for index, line in enumerate(lines):
        rel, label, width, height, quality, size, digest = line.split("\t")
        label, width, height, quality, size = map(int, (label, width, height, quality, size))
        wnid = "n%08d" % label
        if rel != f"train/{wnid}/{wnid}_{index}.JPEG":
            fail(f"line {index}: unexpected path {rel}")
        data = open(os.path.join(root, rel), "rb").read()
        if len(data) != size:
            fail(f"{rel}: {len(data)} bytes, MANIFEST says {size}")
        if "%016x" % fnv1a64(data) != digest:
            fail(f"{rel}: hash differs from the MANIFEST's {digest}")
        im = Image.open(os.path.join(root, rel))
        im.load()
        if im.format != "JPEG" or im.size != (width, height) or im.mode not in ("RGB", "L"):
            fail(f"{rel}: PIL sees {im.format} {im.mode} {im.size}, MANIFEST says {width}x{height}")
        if im.mode == "RGB" and JpegImagePlugin.get_sampling(im) != 2:
            fail(f"{rel}: subsampling {JpegImagePlugin.get_sampling(im)}, expected 2 (4:2:0)")
        if sorted(im.quantization[0]) != sorted(luma_table(quality)):
            fail(f"{rel}: luminance table is not quality {quality}'s")
    print(f"datagen_check: {len(lines)} images OK")


if __name__ == "__main__":
    main()
