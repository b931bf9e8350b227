#!/usr/bin/python3
"""Python overhead per batch: the Fashion-MNIST pipeline iterated from Python (numpy and
torch) next to the same pipeline timed in C++ (`sluice bench fashion-mnist`).

    PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py --build build

Writes bench/results/python_overhead.json. Three figures:
  * cpp: batches/s of `sluice bench fashion-mnist --json` (C++ consumer).
  * python_numpy / python_torch: batches/s of the same pipeline (same runtime settings:
    no static rewrites, the same CPU budget) consumed from Python, as numpy arrays or
    as torch tensors through DLPack; overhead_us = 1e6 / python_rate - 1e6 / cpp_rate.
  * iteration_only: the cost of handing one ready batch to Python, measured on a
    pipeline that does no work (one {"image", "label"} batch repeated): the per-batch
    floor of the binding (GIL release, GetNext, wrapping two arrays or two tensors).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

import sluice
from sluice.data import AUTOTUNE, Dataset

FASHION = "/usr/share/datasets/fashion-mnist"


def fashion_pipeline(data, batch):
    return (Dataset.zip(Dataset.idx(os.path.join(data, "train-images-idx3-ubyte.gz")),
                        Dataset.idx(os.path.join(data, "train-labels-idx1-ubyte.gz")))
            .cache().shuffle(60000, seed=42)
            .map(sluice.expand_dims(-1))
            .map_and_batch(sluice.image.normalize(mean=0.2860, std=0.3530, layout="CHW"),
                           batch, num_parallel_calls=AUTOTUNE)
            .map(sluice.cast(np.int64, components=[1]))
            .repeat().prefetch(AUTOTUNE))


def time_iter(make_iter, seconds, warmup, items_of):
    it = make_iter()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < warmup:
        next(it)
    n = items = 0
    t0 = time.perf_counter()
    while True:
        b = next(it)
        n += 1
        items += items_of(b)
        el = time.perf_counter() - t0
        if el >= seconds:
            break
    return n / el, items / el


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--data", default=FASHION)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--warmup", type=float, default=3)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "results", "python_overhead.json"))
    args = ap.parse_args()
    threads = args.threads or len(os.sched_getaffinity(0))
    result = {"batch_size": args.batch_size, "threads": threads, "seconds": args.seconds}

    cli = os.path.join(args.build, "sluice")
    r = subprocess.run([cli, "bench", "fashion-mnist", "--json", "--seconds", str(args.seconds),
                        "--warmup", str(args.warmup), "--threads", str(threads),
                        "--batch-size", str(args.batch_size), "--data", args.data,
                        "--no-optimize"],  # as make_iterator_with below: the graph as built
                       capture_output=True, text=True, check=True)
    cpp = json.loads(r.stdout.strip().splitlines()[-1])
    cpp_items = cpp["items_per_second"]
    cpp_batches = cpp_items / (60000 / -(-60000 // args.batch_size))  # mean batch size
    result["cpp"] = {"batches_per_second": round(cpp_batches, 1),
                     "items_per_second": round(cpp_items)}

    ds = fashion_pipeline(args.data, args.batch_size)
    make = lambda mode: ds._ds.make_iterator_with(mode, threads, 0, True, False)  # noqa: E731
    rate_np, items_np = time_iter(lambda: make(0), args.seconds, args.warmup,
                                  lambda b: len(b[1]))
    result["python_numpy"] = {"batches_per_second": round(rate_np, 1),
                              "items_per_second": round(items_np),
                              "overhead_us_per_batch": round(1e6 / rate_np - 1e6 / cpp_batches, 1)}
    try:
        import torch
        import sluice.torch as st
        torch.set_num_threads(1)

        def torch_iter():
            it = make(1)
            return (st._convert(e, False, None, False) for e in it)
        rate_t, items_t = time_iter(torch_iter, args.seconds, args.warmup, lambda b: len(b[1]))
        result["python_torch"] = {"batches_per_second": round(rate_t, 1),
                                  "items_per_second": round(items_t),
                                  "overhead_us_per_batch": round(1e6 / rate_t - 1e6 / cpp_batches, 1)}
    except ImportError:
        torch = None

    # The floor: one ready batch repeated, no work per batch.
    one = next(iter(fashion_pipeline(args.data, args.batch_size).take(1)))
    idle = Dataset.from_tensors({"image": one[0], "label": one[1]}).repeat()
    floor = {}
    for mode, name in [(0, "numpy"), (1, "tensor_objects")]:
        it = idle._ds.make_iterator_with(mode, threads, 0, True, False)
        for _ in range(1000):
            next(it)
        n = 100000
        t0 = time.perf_counter()
        for _ in range(n):
            next(it)
        floor[name + "_us_per_batch"] = round((time.perf_counter() - t0) / n * 1e6, 2)
    if torch is not None:
        it = idle._ds.make_iterator_with(1, threads, 0, True, False)
        n = 50000
        t0 = time.perf_counter()
        for _ in range(n):
            st._convert(next(it), False, None, False)
        floor["torch_us_per_batch"] = round((time.perf_counter() - t0) / n * 1e6, 2)
    result["iteration_only"] = floor

    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    sys.exit(main())
