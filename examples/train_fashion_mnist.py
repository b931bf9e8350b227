#!/usr/bin/python3
"""Trains a small CNN on Fashion-MNIST, fed by sluice.

The input pipeline runs in sluice (C++ threads, no GIL): read the IDX files, cache the
decoded rows, shuffle the whole training set every epoch, add the channel dimension,
normalize to float32 CHW and batch (fused map_and_batch), cast the labels, prefetch.
torch receives {"image": float32 [B, 1, 28, 28], "label": int64 [B]} batches through
DLPack with no copy, via the DataLoader adapter.

    /usr/bin/python3 examples/train_fashion_mnist.py                # full: 3 epochs
    /usr/bin/python3 examples/train_fashion_mnist.py --epochs 1 --min-accuracy 0.75

Needs Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist) and the sluice
package (PYTHONPATH=<build>/python, or pip-installed). Exits 1 when the test accuracy is
below --min-accuracy.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn

import sluice
import sluice.torch
from sluice.data import AUTOTUNE, Dataset

MEAN, STD = 0.2860, 0.3530  # of Fashion-MNIST's x / 255, as torchvision users normalize


def pipeline(data_dir, split, batch_size, shuffle, limit=None, seed=42, cpu_budget=None):
    prefix = "train" if split == "train" else "t10k"
    ds = Dataset.zip(Dataset.idx(os.path.join(data_dir, prefix + "-images-idx3-ubyte.gz")),
                     Dataset.idx(os.path.join(data_dir, prefix + "-labels-idx1-ubyte.gz")))
    if limit:
        ds = ds.take(limit)
    ds = ds.cache()
    if shuffle:
        ds = ds.shuffle(60000, seed=seed)  # the whole set: a uniform permutation per epoch
    ds = (ds.map(sluice.expand_dims(-1))                     # [28, 28] -> [28, 28, 1]
          .map_and_batch(sluice.image.normalize(mean=MEAN, std=STD, layout="CHW"),
                         batch_size, num_parallel_calls=AUTOTUNE)
          .map(sluice.cast(np.int64, components=[1]))       # labels: uint8 -> int64
          .map(lambda image, label: {"image": image, "label": label})
          .prefetch(AUTOTUNE))
    if cpu_budget:
        options = sluice.data.Options()
        options.autotune.cpu_budget = cpu_budget
        ds = ds.with_options(options)
    return ds


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.25),
            nn.Linear(128, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def evaluate(model, ds):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for batch in sluice.torch.iterate(ds):
            pred = model(batch["image"]).argmax(1)
            correct += int((pred == batch["label"]).sum())
            total += len(batch["label"])
    return correct / total


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--train-limit", type=int, default=0, help="use the first N training rows")
    ap.add_argument("--threads", type=int, default=0,
                    help="torch threads (default: the cores available)")
    ap.add_argument("--min-accuracy", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    cores = len(os.sched_getaffinity(0))
    torch.set_num_threads(args.threads or cores)
    torch.manual_seed(args.seed)
    train = pipeline(args.data, "train", args.batch_size, True, args.train_limit or None,
                     seed=42 + args.seed, cpu_budget=1)
    test = pipeline(args.data, "test", 1000, False, cpu_budget=1)
    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    loader = torch.utils.data.DataLoader(sluice.torch.IterableDataset(train), batch_size=None,
                                         num_workers=0)
    start = time.monotonic()
    wait = 0.0
    batches = 0
    acc = 0.0
    for epoch in range(args.epochs):
        model.train()
        t_epoch = time.monotonic()
        t_data = time.monotonic()
        running = 0.0
        for i, batch in enumerate(loader):
            wait += time.monotonic() - t_data
            opt.zero_grad()
            loss = loss_fn(model(batch["image"]), batch["label"])
            loss.backward()
            opt.step()
            running += loss.item()
            batches += 1
            t_data = time.monotonic()
        acc = evaluate(model, test)
        print("epoch %d: loss %.4f, test accuracy %.4f, %.1f s" %
              (epoch + 1, running / max(i + 1, 1), acc, time.monotonic() - t_epoch), flush=True)
    total = time.monotonic() - start
    summary = {"epochs": args.epochs, "test_accuracy": round(acc, 4),
               "seconds": round(total, 1), "input_wait_seconds": round(wait, 2),
               "batches": batches, "torch_threads": torch.get_num_threads()}
    print(json.dumps(summary))
    if acc < args.min_accuracy:
        print("FAIL: test accuracy %.4f < %.4f" % (acc, args.min_accuracy), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
