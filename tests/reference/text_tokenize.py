"""Reference for the tokenize kernel on a generated corpus.

  text_tokenize.py CORPUS_DIR NUM_OOV_BUCKETS DEFAULT_VALUE IDS.npy LENGTHS.npy

Reads CORPUS_DIR/vocab.txt (id = line number) and the TFRecord shards text-*-of-* in
name order (framing only: uint64 length, uint32 crc, data, uint32 crc; CRCs are not
checked here, the C++ reader checks them), splits each record with bytes.split() and
looks tokens up in a dict. Out-of-vocabulary tokens get DEFAULT_VALUE, or with buckets
vocab_size + FNV-1a-64(token) % NUM_OOV_BUCKETS. Writes all ids concatenated (int64) and
the per-sentence token counts (int64).
"""
import glob
import os
import struct
import sys

import numpy as np

corpus, buckets, default = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

with open(os.path.join(corpus, "vocab.txt"), "rb") as f:
    lines = f.read().split(b"\n")
if lines and lines[-1] == b"":
    lines.pop()
vocab = {tok: i for i, tok in enumerate(lines)}
assert len(vocab) == len(lines), "duplicate tokens in vocab.txt"


def fnv1a64(b):
    h = 0xcbf29ce484222325
    for c in b:
        h ^= c
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def lookup(tok):
    i = vocab.get(tok)
    if i is not None:
        return i
    if buckets > 0:
        return len(vocab) + fnv1a64(tok) % buckets
    return default


def records(path):
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos < len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        yield data[pos + 12:pos + 12 + n]
        pos += 12 + n + 4


ids, lengths = [], []
for path in sorted(glob.glob(os.path.join(corpus, "text-*-of-*"))):
    for rec in records(path):
        toks = [lookup(t) for t in rec.split()]
        ids.extend(toks)
        lengths.append(len(toks))
np.save(sys.argv[4], np.array(ids, dtype=np.int64))
np.save(sys.argv[5], np.array(lengths, dtype=np.int64))
