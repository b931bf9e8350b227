#!/usr/bin/python3
"""Small-element suite (issue 22): do sluice's default options ever slow a pipeline down?

  PYTHONPATH=build/python /usr/bin/python3 bench/small_elements.py \\
      [--repeats 5] [--seconds 1.5] [--only a,b] [--out bench/results/small_elements.json]

Each pipeline is written the way docs/python.md tells users to, then run in three
configurations, interleaved round by round in this one process (the order rotates each
round, so drift in the machine's speed hits all three alike):

  defaults   the pipeline as written, default Options
  as_built   Options().optimization.apply_default_optimizations = False: the graph as
             built, no static rewrite
  all_on     every optimizer pass switched on by name and the cost model off
             (optimization.cost_model = False): every rewrite the passes can make, made
             unconditionally, as tf.data does

A round times each configuration for --seconds (whole epochs through fresh iterators, as
a training loop makes them; at least one epoch). Per pipeline: the median elements/s of
each configuration over the rounds (elements = rows: batch dimension summed), the ratio
defaults / max(as_built, all_on) of the medians, the median of the per-round ratios, and
pass = ratio >= 0.95 (on the ratio of the medians). Progress on stderr; the last stdout
line (and --out) is one JSON object.

Pipelines: the four of issue 22 (from_tensor_slices(float32[262144, 16]) -> map(cast
float64) -> batch(256); -> shuffle(1000) -> batch(256); range(N) -> map(cast) ->
batch(64); -> batch(256)), text tokenize-and-pad (TextLineDataset over a generated file
-> map(sluice.text.tokenize(vocab)) -> padded_batch(64)), Fashion-MNIST (the documented
pipeline, bench/sluice_fashion_mnist.py, on uncompressed IDX files) and the `sluice bench
text` suite's pipeline written from Python (TFRecord shards -> tokenize ->
bucket_by_sequence_length -> padded_batch; needs `sluice datagen text` data, --text-data).
"""
import argparse
import gzip
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice  # noqa: E402
from sluice.data import AUTOTUNE, Dataset  # noqa: E402

# Every optimizer pass by name (src/optimizer/optimizer.cc DefaultPasses()).
PASSES = ["noop_elimination", "global_shuffle", "vectorize_map_batch",
          "shuffle_and_repeat_fusion", "decode_and_crop_fusion", "map_fusion",
          "filter_fusion", "map_parallelization", "map_and_filter_fusion",
          "map_and_batch_fusion", "parallel_batch", "inject_prefetch"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def configurations(ds):
    built = sluice.data.Options()
    built.optimization.apply_default_optimizations = False
    on = sluice.data.Options()
    for p in PASSES:
        setattr(on.optimization, p, True)
    on.optimization.cost_model = False
    return {"defaults": ds, "as_built": ds.with_options(built), "all_on": ds.with_options(on)}


def rows(element):
    x = element[0] if isinstance(element, tuple) else element
    return x.shape[0] if getattr(x, "ndim", 0) > 0 else 1


def rate(ds, seconds):
    """Elements/s over whole epochs, at least one, until `seconds` have passed."""
    n, t0 = 0, time.perf_counter()
    while True:
        for e in ds:
            n += rows(e)
        dt = time.perf_counter() - t0
        if dt >= seconds:
            return n / dt


def make_text_file(root, vocab, lines=100000, seed=1):
    words = [w for w in open(vocab, encoding="utf-8").read().split("\n")[2:] if w][:5000]
    rng = random.Random(seed)
    path = os.path.join(root, "lines.txt")
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(lines):
            f.write(" ".join(rng.choice(words) for _ in range(rng.randint(4, 40))) + "\n")
    return path


def pipelines(a, tmp):
    feats = np.random.default_rng(0).random((262144, 16), dtype=np.float32)
    out = {
        "slices_map_cast_batch256": lambda: Dataset.from_tensor_slices(feats)
        .map(sluice.cast("float64")).batch(256),
        "slices_shuffle1000_batch256": lambda: Dataset.from_tensor_slices(feats)
        .shuffle(1000, seed=1).batch(256),
        "range_map_cast_batch64": lambda: Dataset.range(a.range_n)
        .map(sluice.cast("float32")).batch(64),
        "slices_batch256": lambda: Dataset.from_tensor_slices(feats).batch(256),
    }
    vocab = os.path.join(a.text_data, "vocab.txt")
    if os.path.exists(vocab):
        lines = make_text_file(tmp, vocab)
        out["textline_tokenize_padded_batch64"] = lambda: (
            sluice.data.TextLineDataset(lines)
            .map(sluice.text.tokenize(vocab, default_value=1))
            .padded_batch(64))
        shards = sorted(os.path.join(a.text_data, f) for f in os.listdir(a.text_data)
                        if f.startswith("text-"))
        out["text_suite_bucket_padded_batch"] = lambda: (
            sluice.data.TFRecordDataset(shards)
            .map(sluice.text.tokenize(vocab, default_value=1))
            .bucket_by_sequence_length(sluice.text.sequence_length(), [16, 32, 64, 128],
                                       [128] * 5, padding_values=-1)
            .prefetch(AUTOTUNE))
    else:
        log(f"[skip] text pipelines: no {vocab} (sluice datagen text --out {a.text_data})")
    names = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte"]
    files = []
    for n in names:
        dst = os.path.join(tmp, n)
        if os.path.exists(os.path.join(a.fashion_mnist, n + ".gz")):
            with gzip.open(os.path.join(a.fashion_mnist, n + ".gz"), "rb") as fin, \
                    open(dst, "wb") as fout:
                shutil.copyfileobj(fin, fout)
        elif os.path.exists(os.path.join(a.fashion_mnist, n)):
            shutil.copyfile(os.path.join(a.fashion_mnist, n), dst)
        else:
            log(f"[skip] fashion_mnist: no {n}(.gz) in {a.fashion_mnist}")
            return out
        files.append(dst)
    from sluice_fashion_mnist import pipeline as fashion_mnist
    out["fashion_mnist"] = lambda: fashion_mnist(*files, 256)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5, help="rounds")
    p.add_argument("--seconds", type=float, default=1.5, help="per configuration per round")
    p.add_argument("--range-n", type=int, default=10**6)
    p.add_argument("--only", default="", help="comma-separated pipeline names")
    p.add_argument("--text-data", default="data/text")
    p.add_argument("--fashion-mnist", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--out", default="")
    a = p.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="sluice_small_") as tmp:
        pl = pipelines(a, tmp)
        if a.only:
            pl = {k: v for k, v in pl.items() if k in a.only.split(",")}
        for name, make in pl.items():
            cfg = configurations(make())
            runs = {k: [] for k in cfg}
            for ds in cfg.values():  # first epochs: load files, warm caches
                rate(ds, 0)
            order = list(cfg)
            for r in range(a.repeats):
                for k in order[r % 3:] + order[:r % 3]:
                    runs[k].append(rate(cfg[k], a.seconds))
                log(f"{name} round {r + 1}: " +
                    ", ".join(f"{k} {v[-1]:,.0f}/s" for k, v in runs.items()))
            med = {k: statistics.median(v) for k, v in runs.items()}
            best = max(med["as_built"], med["all_on"])
            per_round = [d / max(b, o) for d, b, o in
                         zip(runs["defaults"], runs["as_built"], runs["all_on"])]
            results[name] = {
                "elements_per_second": med, "runs": runs,
                "ratio": med["defaults"] / best,
                "median_round_ratio": statistics.median(per_round),
                "round_ratio_min": min(per_round), "round_ratio_max": max(per_round),
                "pass": med["defaults"] / best >= 0.95}
            log(f"== {name}: defaults {med['defaults']:,.0f}/s, as built "
                f"{med['as_built']:,.0f}/s, all on {med['all_on']:,.0f}/s, ratio "
                f"{results[name]['ratio']:.3f} -> "
                f"{'pass' if results[name]['pass'] else 'FAIL'}")
    out = {"suite": "small_elements", "repeats": a.repeats, "seconds": a.seconds,
           "pipelines": results, "pass": all(r["pass"] for r in results.values())}
    text = json.dumps(out)
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            f.write(json.dumps(out, indent=1) + "\n")
    print(text)


if __name__ == "__main__":
    main()
