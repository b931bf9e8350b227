"""PIL / torchvision references for tests/ops/image_kernels_test.cc.

Usage: image_transforms.py MANIFEST

Each line of MANIFEST is one operation, whitespace-separated; images are HWC .npy files:
  pil_crop_resize IN Y X H W OH OW OUT
      Image.fromarray(IN).crop((X, Y, X+W, Y+H)).resize((OW, OH), Image.BILINEAR): what
      torchvision's resized_crop does on PIL images. Gray (1 channel) is mode L, 3 channels
      RGB; 2 or 4 channels are resized channel by channel as L (PIL premultiplies RGBA).
  torch_resize IN Y X H W OH OW ANTIALIAS OUT
      torch.nn.functional.interpolate(float32 crop, (OH, OW), mode="bilinear",
      align_corners=False, antialias=ANTIALIAS (0/1)), float32 HWC.
  center_crop IN CH CW OUT        torchvision.transforms.functional.center_crop
  hflip IN OUT                    torchvision.transforms.functional.hflip
  to_tensor IN OUT                ToTensor (uint8 -> float32 / 255), kept HWC
  normalize IN LAYOUT MEANS STDS OUT
      ToTensor (uint8) or the float32 tensor as is, then Normalize(MEANS, STDS) (comma
      separated); LAYOUT CHW or HWC.
  rrc_params H W S0 S1 R0 R1 N SEED OUT
      N windows (top, left, height, width) from RandomResizedCrop.get_params on an HxW
      image after torch.manual_seed(SEED), int64 [N, 4].
"""
import sys

import numpy as np
from PIL import Image

_torch = None


def torch_modules():
    global _torch
    if _torch is None:
        import torch
        import torchvision.transforms as T
        import torchvision.transforms.functional as F
        _torch = (torch, T, F)
    return _torch


def chw(a):
    torch, _, _ = torch_modules()
    return torch.from_numpy(np.ascontiguousarray(a)).permute(2, 0, 1)


def hwc(t):
    return np.ascontiguousarray(t.permute(1, 2, 0).numpy())


def pil_crop_resize(a, y, x, h, w, oh, ow):
    box = (x, y, x + w, y + h)
    if a.shape[2] in (1, 3):
        img = Image.fromarray(a[:, :, 0] if a.shape[2] == 1 else a)
        out = np.asarray(img.crop(box).resize((ow, oh), Image.BILINEAR))
        return out.reshape(oh, ow, a.shape[2])
    planes = [np.asarray(Image.fromarray(np.ascontiguousarray(a[:, :, c])).crop(box)
                         .resize((ow, oh), Image.BILINEAR)) for c in range(a.shape[2])]
    return np.stack(planes, axis=2)


def run(op, args):
    if op == "pil_crop_resize":
        a = np.load(args[0])
        y, x, h, w, oh, ow = map(int, args[1:7])
        np.save(args[7], pil_crop_resize(a, y, x, h, w, oh, ow))
    elif op == "torch_resize":
        torch, _, _ = torch_modules()
        a = np.load(args[0]).astype(np.float32)
        y, x, h, w, oh, ow, aa = map(int, args[1:8])
        t = chw(a[y:y + h, x:x + w]).unsqueeze(0)
        r = torch.nn.functional.interpolate(t, size=(oh, ow), mode="bilinear",
                                            align_corners=False, antialias=bool(aa))
        np.save(args[8], hwc(r[0]).astype(np.float32))
    elif op == "center_crop":
        _, _, F = torch_modules()
        a = np.load(args[0])
        np.save(args[3], hwc(F.center_crop(chw(a), [int(args[1]), int(args[2])])))
    elif op == "hflip":
        _, _, F = torch_modules()
        np.save(args[1], hwc(F.hflip(chw(np.load(args[0])))))
    elif op == "to_tensor":
        _, T, _ = torch_modules()
        np.save(args[1], hwc(T.ToTensor()(np.load(args[0]))))
    elif op == "normalize":
        _, T, F = torch_modules()
        a = np.load(args[0])
        t = T.ToTensor()(a) if a.dtype == np.uint8 else chw(a)
        mean = [float(v) for v in args[2].split(",")]
        std = [float(v) for v in args[3].split(",")]
        t = T.Normalize(mean, std)(t)
        out = t.numpy() if args[1] == "CHW" else hwc(t)
        np.save(args[4], np.ascontiguousarray(out).astype(np.float32))
    elif op == "rrc_params":
        torch, T, _ = torch_modules()
        h, w = int(args[0]), int(args[1])
        scale = (float(args[2]), float(args[3]))
        ratio = (float(args[4]), float(args[5]))
        n, seed = int(args[6]), int(args[7])
        torch.manual_seed(seed)
        img = torch.empty(1, h, w)
        out = np.array([T.RandomResizedCrop.get_params(img, scale, ratio) for _ in range(n)],
                       dtype=np.int64)
        np.save(args[8], out.reshape(n, 4))
    else:
        raise SystemExit("unknown op " + op)


def main():
    with open(sys.argv[1]) as f:
        for line in f:
            parts = line.split()
            if parts:
                run(parts[0], parts[1:])


if __name__ == "__main__":
    main()
