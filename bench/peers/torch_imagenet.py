#!/usr/bin/python3
"""PyTorch's ImageNet input pipeline, the way its users write it (the peer of
`sluice bench imagenet`).

torchvision ImageFolder over DATA/train, RandomResizedCrop(224), RandomHorizontalFlip,
ToTensor, Normalize, DataLoader(batch_size=128, shuffle=True, num_workers=N,
persistent_workers=True). Counts images delivered to the consumer for --seconds after
--warmup seconds. The last stdout line is one JSON object.
"""
import argparse
import json

import torch
import torchvision
from torchvision import transforms

from peer_timing import forever, time_batches


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--data", required=True)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--warmup", type=float, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=128)
    a = p.parse_args()

    tf = transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])
    ds = torchvision.datasets.ImageFolder(a.data + "/train", transform=tf)
    loader = torch.utils.data.DataLoader(ds, batch_size=a.batch_size, shuffle=True,
                                         num_workers=a.workers,
                                         persistent_workers=a.workers > 0)

    images, seconds, _ = time_batches(forever(loader), "imagenet", a.warmup, a.seconds,
                                      lambda batch: batch[0].shape[0])
    print(json.dumps({"suite": "imagenet", "impl": "pytorch", "items_per_second": images / seconds,
                      "items": images, "seconds": seconds, "workers": a.workers,
                      "torch": torch.__version__, "torchvision": torchvision.__version__}))


if __name__ == "__main__":
    main()
