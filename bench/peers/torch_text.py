#!/usr/bin/python3
"""PyTorch's text input pipeline, the way its users write it (the peer of
`sluice bench text`).

An IterableDataset reads the TFRecord shards DATA/text-*-of-* (written by
`sluice datagen text`) with a minimal reader: uint64 length (little endian), uint32
length CRC, the record, uint32 data CRC. CRCs are NOT verified (the standard library has
no CRC-32C; sluice does verify them, so this favours PyTorch slightly). Each DataLoader
worker takes every N-th shard and loops over its shards forever. A record is decoded as
UTF-8, split with str.split() (the corpus has no non-ASCII whitespace, so this equals
sluice's ASCII split) and looked up in a dict built from DATA/vocab.txt (id =
line number; unknown words -> 1, "<unk>"). Sequences are bucketed by length with the
same boundaries and batch size as sluice (boundaries 16, 32, 64, 128: bucket b holds
lengths in [boundaries[b-1], boundaries[b]); 128 per batch in every bucket); a full
bucket is collated with torch.nn.utils.rnn.pad_sequence (batch first, padding -1) into
an int64 [batch, longest] tensor. DataLoader(batch_size=None, num_workers=N,
persistent_workers=True).

Counts sequences delivered to the consumer for --seconds after --warmup seconds. The last
stdout line is one JSON object: {"suite": "text", "impl": "pytorch",
"items_per_second", "items", "seconds", "batches", "tokens", "tokens_per_second",
"padding_fraction", "workers", "torch"}.
"""
import argparse
import bisect
import glob
import json
import os
import struct

import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from peer_timing import forever, time_batches

BOUNDARIES = [16, 32, 64, 128]
UNK_ID = 1
PAD_ID = -1


def tfrecords(path):
    """Yields the records of one uncompressed TFRecord file (CRCs not checked)."""
    with open(path, "rb", buffering=1 << 20) as f:
        while True:
            header = f.read(12)
            if not header:
                return
            if len(header) < 12:
                raise IOError(f"{path}: truncated record header")
            (length,) = struct.unpack("<Q", header[:8])
            data = f.read(length)
            footer = f.read(4)
            if len(data) < length or len(footer) < 4:
                raise IOError(f"{path}: truncated record")
            yield data


class BucketedText(IterableDataset):
    def __init__(self, data_dir, batch_size):
        self.files = sorted(glob.glob(os.path.join(data_dir, "text-*-of-*")))
        if not self.files:
            raise SystemExit(f"no text-*-of-* shards in {data_dir}")
        with open(os.path.join(data_dir, "vocab.txt"), encoding="utf-8") as f:
            self.vocab = {line.rstrip("\n"): i for i, line in enumerate(f)}
        self.batch_size = batch_size

    def __iter__(self):
        info = get_worker_info()
        wid, nw = (info.id, info.num_workers) if info else (0, 1)
        files = self.files[wid::nw] or self.files  # more workers than shards: share
        vocab, bs = self.vocab, self.batch_size
        buckets = [[] for _ in range(len(BOUNDARIES) + 1)]
        while True:  # repeat forever
            for path in files:
                for record in tfrecords(path):
                    ids = [vocab.get(w, UNK_ID) for w in record.decode("utf-8").split()]
                    b = bisect.bisect_right(BOUNDARIES, len(ids))
                    buckets[b].append(torch.tensor(ids, dtype=torch.int64))
                    if len(buckets[b]) == bs:
                        yield buckets[b]
                        buckets[b] = []


def collate(sequences):
    return pad_sequence(sequences, batch_first=True, padding_value=PAD_ID)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--warmup", type=float, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=128)
    a = p.parse_args()

    loader = DataLoader(BucketedText(a.data, a.batch_size), batch_size=None,
                        collate_fn=collate, num_workers=a.workers,
                        persistent_workers=a.workers > 0)
    batches = tokens = cells = 0

    def tally(x):
        nonlocal batches, tokens, cells
        batches += 1
        tokens += int((x != PAD_ID).sum())
        cells += x.numel()
        return x.shape[0]

    items, seconds, _ = time_batches(forever(loader), "text", a.warmup, a.seconds, tally)
    print(json.dumps({"suite": "text", "impl": "pytorch", "items_per_second": items / seconds,
                      "items": items, "seconds": seconds, "batches": batches, "tokens": tokens,
                      "tokens_per_second": tokens / seconds,
                      "padding_fraction": 1 - tokens / cells if cells else 0.0,
                      "batch_size": a.batch_size, "bucket_boundaries": BOUNDARIES,
                      "workers": a.workers, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
