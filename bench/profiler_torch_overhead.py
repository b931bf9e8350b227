#!/usr/bin/python3
"""Overhead of sluice.profiler.torch on the torchvision ImageNet-style DataLoader pipeline
(ImageFolder, RandomResizedCrop(224), RandomHorizontalFlip, ToTensor, Normalize; batch
32; 2 workers), side by side with the same DataLoader unprofiled, and the cost of one
recorded span (a profiled identity transform against a plain one).

Paired rounds, as bench/profiler_bench.cc does: each round is one epoch plain and one
profiled, in an order that alternates; every epoch does identical work (the loader's
generator and so the shuffle order and the workers' seeds are fixed; first pair
discarded). Per epoch: wall time and the CPU of the main process plus its workers
(getrusage self + children: the workers are reaped at the epoch's end). The overhead is
the median per-pair ratio with a 95% bootstrap interval and a sign test. Prints one JSON
object.

  PYTHONPATH=build/python /usr/bin/python3 bench/profiler_torch_overhead.py
"""
import argparse
import json
import math
import os
import random
import resource
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


def cpu_s():
    self_, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return self_.ru_utime + self_.ru_stime + kids.ru_utime + kids.ru_stime


def epoch(loader):
    c0, t0 = cpu_s(), time.perf_counter()
    n = sum(x.shape[0] for x, _ in loader)
    del loader  # workers joined: their CPU is in RUSAGE_CHILDREN
    return n, time.perf_counter() - t0, cpu_s() - c0


def paired(a, b, resamples=4000):
    """Overhead of b over a in percent: median per-pair ratio, bootstrap 95%, sign test."""
    r = [y / x for x, y in zip(a, b) if x > 0]
    rng = random.Random(12345)
    meds = sorted(statistics.median(rng.choice(r) for _ in r) for _ in range(resamples))
    slower = sum(x > 1 for x in r)
    k, n = min(slower, len(r) - slower), len(r)
    p = min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)
    pct = lambda x: 100 * (x - 1)
    return {"pairs": n, "median_pct": pct(statistics.median(r)),
            "ci95_pct": [pct(meds[int(0.025 * (resamples - 1))]),
                         pct(meds[int(0.975 * (resamples - 1))])],
            "pairs_variant_slower": slower, "sign_test_p": p}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--images", type=int, default=512)
    p.add_argument("--repeats", type=int, default=11)
    p.add_argument("--workers", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(1)
    work = tempfile.mkdtemp(prefix="sluice-prof-bench-")
    root = os.path.join(work, "train")
    make_folder(root, a.images)

    def run(profiled, r):
        gen = torch.Generator().manual_seed(7)
        if not profiled:
            ds = torchvision.datasets.ImageFolder(root, transform=tf())
            loader = torch.utils.data.DataLoader(ds, batch_size=32, shuffle=True,
                                                 num_workers=a.workers, generator=gen)
            return epoch(loader) + (0,)
        prof = sluice.profiler.torch.Profiler(os.path.join(work, "t%d.json" % r))
        ds = torchvision.datasets.ImageFolder(root, transform=prof.transforms(tf()))
        loader = prof.dataloader(ds, batch_size=32, shuffle=True, num_workers=a.workers,
                                 generator=gen)
        out = epoch(loader)
        _, summary = prof.finish()
        return out + (summary["events"],)

    wall = {False: [], True: []}
    cpu = {False: [], True: []}
    events = 0
    for r in range(a.repeats + 1):
        for profiled in ((False, True) if r % 2 == 0 else (True, False)):
            n, w, c, ev = run(profiled, r)
            assert n == a.images
            if r == 0:
                continue  # warm: page cache, imports, allocator
            wall[profiled].append(w)
            cpu[profiled].append(c)
            events = ev or events
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
    print(json.dumps({
        "images": a.images, "workers": a.workers, "pairs": a.repeats,
        "plain_wall_s": statistics.median(wall[False]),
        "profiled_wall_s": statistics.median(wall[True]),
        "plain_cpu_s": statistics.median(cpu[False]),
        "profiled_cpu_s": statistics.median(cpu[True]),
        "overhead_wall": paired(wall[False], wall[True]),
        "overhead_cpu": paired(cpu[False], cpu[True]),
        "events_per_epoch": events,
        "cost_per_span_us": ((t1 - t0) - (t2 - t1)) / k * 1e6,
        "loadavg": open("/proc/loadavg").read().strip()}, indent=1))


if __name__ == "__main__":
    main()
