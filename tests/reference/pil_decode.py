"""Decodes an image file with PIL into a uint8 .npy (for tests/datagen/datagen_test.cc's encoder
checks).

usage: pil_decode.py IN_FILE OUT.npy

Writes [h, w, 3] for RGB images and [h, w, 1] for grayscale ones (mode "L"), as PIL
decodes them (JPEG through the system libjpeg-turbo, PNG through zlib). Also prints the
format, mode and, for JPEG, the chroma subsampling PIL reports (0 = 4:4:4, 1 = 4:2:2,
2 = 4:2:0, -1 = grayscale) as "FORMAT MODE SUBSAMPLING" on the last line, and writes it to
OUT.npy.txt.
"""
import sys

import numpy as np
from PIL import Image, JpegImagePlugin

im = Image.open(sys.argv[1])
im.load()
a = np.asarray(im)
if a.ndim == 2:
    a = a[:, :, None]
np.save(sys.argv[2], np.ascontiguousarray(a, dtype=np.uint8))
sampling = JpegImagePlugin.get_sampling(im) if im.format == "JPEG" else -1
info = f"{im.format} {im.mode} {sampling}"
with open(sys.argv[2] + ".txt", "w") as f:
    f.write(info + "\n")
print(info)
