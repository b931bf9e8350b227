#!/usr/bin/python3
"""PyTorch's Fashion-MNIST input pipeline, the way its users write it (the peer of
`sluice bench fashion-mnist`).

torchvision.datasets.FashionMNIST(train=True) with ToTensor + Normalize((0.2860,),
(0.3530,)), DataLoader(batch_size=256, shuffle=True, num_workers=N,
persistent_workers=N > 0): every epoch a fresh uniform permutation of the 60000 training
images, batches of float32 [256, 1, 28, 28] and int64 labels (the last one of each epoch
holds 96). Iterates epochs until --warmup then --seconds have passed and counts the
images delivered in the measured part.

--data is a directory with Debian's gzipped IDX files (dataset-fashion-mnist:
train-images-idx3-ubyte.gz, ...). torchvision 0.14 reads only decompressed files from
ROOT/FashionMNIST/raw/ (and refuses to start unless all four exist), so they are
decompressed into a temporary ROOT first (not timed). The last stdout line is one JSON
object.
"""
import argparse
import gzip
import json
import os
import shutil
import sys
import tempfile

import torch
import torchvision
from torchvision import transforms

from peer_timing import forever, time_batches

FILES = [
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
]


def prepare_root(data, root):
    """ROOT/FashionMNIST/raw/<name>, decompressed from DATA/<name>.gz (or copied)."""
    raw = os.path.join(root, "FashionMNIST", "raw")
    os.makedirs(raw)
    for name in FILES:
        src = os.path.join(data, name)
        if os.path.exists(src + ".gz"):
            with gzip.open(src + ".gz", "rb") as fin, open(os.path.join(raw, name), "wb") as fout:
                shutil.copyfileobj(fin, fout)
        elif os.path.exists(src):
            shutil.copyfile(src, os.path.join(raw, name))
        else:
            sys.exit(f"torch_fashion_mnist: {src}(.gz) not found")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--warmup", type=float, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=256)
    a = p.parse_args()

    with tempfile.TemporaryDirectory(prefix="torch_fashion_mnist_") as root:
        prepare_root(a.data, root)
        tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.2860,), (0.3530,))])
        ds = torchvision.datasets.FashionMNIST(root, train=True, transform=tf, download=False)
        loader = torch.utils.data.DataLoader(ds, batch_size=a.batch_size, shuffle=True,
                                             num_workers=a.workers,
                                             persistent_workers=a.workers > 0)

        it = forever(loader)
        images, seconds, (x, y) = time_batches(it, "fashion_mnist", a.warmup, a.seconds,
                                               lambda batch: batch[0].shape[0])
        assert x.dtype == torch.float32 and x.shape[1:] == (1, 28, 28) and y.dtype == torch.int64
        del it, loader  # stop the workers before the temporary root goes
    print(json.dumps({"suite": "fashion_mnist", "impl": "pytorch",
                      "items_per_second": images / seconds, "items": images, "seconds": seconds,
                      "workers": a.workers, "batch_size": a.batch_size,
                      "torch": torch.__version__, "torchvision": torchvision.__version__}))


if __name__ == "__main__":
    main()
