#!/usr/bin/python3
"""Overhead of sluice.profiler.torch on the torchvision ImageNet-style DataLoader pipeline
(ImageFolder, RandomResizedCrop(224), RandomHorizontalFlip, ToTensor, Normalize; batch
32; 2 workers), side by side with the same DataLoader unprofiled, and the cost of one
recorded span (a profiled identity transform against a plain one).

Runs plain and profiled interleaved, --repeats times, one epoch each over --images
generated JPEGs (256x256); prints one JSON object with medians, min and max.

  PYTHONPATH=build/python /usr/bin/python3 bench/profiler_torch_overhead.py
"""
import argparse
import json
import os
import statistics
import tempfile
import time

import numpy as np
import torch
import torchvision
from torchvision import transforms

import sluice.profiler


def make_folder(root, n):
    from PIL import Image
    rng = np.random.default_rng(0)
    for c in range(4):
        os.makedirs(os.path.join(root, "c%d" % c))
    for i in range(n):
        px = rng.integers(0, 255, (256, 256, 3), dtype=np.uint8)
        Image.fromarray(px).save(os.path.join(root, "c%d" % (i % 4), "%d.jpg" % i), quality=90)


def tf():
    return transforms.Compose([
        transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])])


def epoch(loader):
    t0 = time.perf_counter()
    n = sum(x.shape[0] for x, _ in loader)
    return n, time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--images", type=int, default=512)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--workers", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(1)
    work = tempfile.mkdtemp(prefix="sluice-prof-bench-")
    root = os.path.join(work, "train")
    make_folder(root, a.images)
    plain_s, prof_s, events = [], [], 0
    for r in range(a.repeats):
        ds = torchvision.datasets.ImageFolder(root, transform=tf())
        loader = torch.utils.data.DataLoader(ds, batch_size=32, shuffle=True,
                                             num_workers=a.workers)
        n, s = epoch(loader)
        plain_s.append(s)
        prof = sluice.profiler.torch.Profiler(os.path.join(work, "t%d.json" % r))
        ds = torchvision.datasets.ImageFolder(root, transform=prof.transforms(tf()))
        loader = prof.dataloader(ds, batch_size=32, shuffle=True, num_workers=a.workers)
        n2, s = epoch(loader)
        del loader
        prof_s.append(s)
        _, summary = prof.finish()
        events = summary["events"]
        assert n == n2 == a.images
    # The cost of one recorded span, in this process.
    prof = sluice.profiler.torch.Profiler(os.path.join(work, "c.json"))
    f, g, k = prof.transforms(lambda x: x), (lambda x: x), 200000
    t0 = time.perf_counter()
    for i in range(k):
        f(i)
    t1 = time.perf_counter()
    for i in range(k):
        g(i)
    t2 = time.perf_counter()
    prof.finish()
    med_plain, med_prof = statistics.median(plain_s), statistics.median(prof_s)
    print(json.dumps({
        "images": a.images, "workers": a.workers, "repeats": a.repeats,
        "plain_s": {"median": med_plain, "min": min(plain_s), "max": max(plain_s)},
        "profiled_s": {"median": med_prof, "min": min(prof_s), "max": max(prof_s)},
        "overhead_pct": 100 * (med_prof - med_plain) / med_plain,
        "events_per_epoch": events,
        "cost_per_span_us": ((t1 - t0) - (t2 - t1)) / k * 1e6}, indent=1))


if __name__ == "__main__":
    main()
