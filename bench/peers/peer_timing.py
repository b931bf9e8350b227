"""The timing loop the PyTorch peers share (the twin of sluice's TimePipeline).

time_batches(batches, suite, warmup, seconds, on_batch) draws from the endless iterator
`batches` for `warmup` seconds, then counts for `seconds`: on_batch(batch) returns how
many items the batch holds (and may tally more). Prints progress to stderr every 5 s and
returns (items, measured seconds, last batch).
"""
import sys
import time


def forever(loader):
    """Batches of `loader`, epoch after epoch."""
    while True:
        for batch in loader:
            yield batch


def time_batches(batches, suite, warmup, seconds, on_batch):
    start = time.monotonic()
    while time.monotonic() - start < warmup:
        next(batches)
    items, start = 0, time.monotonic()
    last = start
    while True:
        batch = next(batches)
        items += on_batch(batch)
        now = time.monotonic()
        if now - start >= seconds:
            return items, now - start, batch
        if now - last > 5:
            last = now
            print(f"  [{suite}/pytorch] {now - start:5.1f}s {items / (now - start):10.1f} items/s",
                  file=sys.stderr)
