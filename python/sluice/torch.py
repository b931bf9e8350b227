"""PyTorch integration: sluice elements as torch tensors through DLPack (no copy).

    import sluice.torch
    for batch in sluice.torch.iterate(ds, device="cuda", pin_memory=True):
        images, labels = batch["image"], batch["label"]

    loader = torch.utils.data.DataLoader(sluice.torch.IterableDataset(ds),
                                         batch_size=None, num_workers=0)

Tensors share sluice's buffers (``t.data_ptr()`` is the sluice buffer's address); treat
them as read-only (a cached pipeline hands out the same buffers every epoch) and
``.clone()`` before writing in place. String components come out as numpy object arrays
of bytes (torch has no string tensors). ``pin_memory=True`` copies each tensor once into
page-locked memory (``Tensor.pin_memory()``), which needs CUDA; without CUDA it warns
once and is ignored, as torch's DataLoader does. ``device`` moves tensors there
(``non_blocking`` when pinned). Batching belongs in sluice (``ds.batch``), so the
DataLoader adapter runs with ``batch_size=None`` and ``num_workers=0``: sluice's own
threads do the parallel work, without worker processes.
"""

import warnings

import torch as _torch
import torch.utils.data as _tud
from torch.utils.dlpack import from_dlpack as _from_dlpack

from . import _sluice

_warned_pin = False


def _tensor(value):
    # Torch before 2.1 rejects DLPack's bool code (kDLBool), which sluice exports as the
    # standard says; bool tensors go through the numpy view instead, also without a copy.
    if value.dtype == "bool":
        return _torch.from_numpy(value.numpy())
    return _from_dlpack(value.__dlpack__())


def to_torch(value):
    """A sluice.Tensor (or a numpy array from sluice) as a torch tensor sharing its memory."""
    if isinstance(value, _sluice.Tensor):
        return _tensor(value)
    return _torch.from_numpy(value)


def _convert(x, pin, device, non_blocking):
    if isinstance(x, _sluice.Tensor):
        t = _tensor(x)
        if pin:
            t = t.pin_memory()
        if device is not None:
            t = t.to(device, non_blocking=non_blocking)
        return t
    if isinstance(x, dict):
        return {k: _convert(v, pin, device, non_blocking) for k, v in x.items()}
    if isinstance(x, tuple):
        values = [_convert(v, pin, device, non_blocking) for v in x]
        return type(x)(*values) if hasattr(type(x), "_fields") else tuple(values)
    return x  # strings: numpy object arrays / bytes


def _pin_allowed(pin_memory):
    global _warned_pin
    if not pin_memory:
        return False
    if _torch.cuda.is_available():
        return True
    if not _warned_pin:
        warnings.warn("sluice.torch: pin_memory=True needs CUDA, which is not available; "
                      "tensors stay in pageable memory", RuntimeWarning, stacklevel=3)
        _warned_pin = True
    return False


def iterate(dataset, device=None, pin_memory=False):
    """Yields the elements of a sluice Dataset as torch tensors (dict / tuple / tensor, the
    dataset's structure). The iterator is a generator over a sluice Iterator; Ctrl-C stops
    it with KeyboardInterrupt."""
    pin = _pin_allowed(pin_memory)
    device = None if device is None else _torch.device(device)
    non_blocking = pin and device is not None and device.type == "cuda"
    it = dataset._tensor_iterator()
    try:
        for element in it:
            yield _convert(element, pin, device, non_blocking)
    finally:
        it.close()


class IterableDataset(_tud.IterableDataset):
    """A torch IterableDataset over a sluice Dataset, for
    ``DataLoader(adapter, batch_size=None, num_workers=0)``. Each ``iter()`` starts a new
    pass (a new sluice iterator, so shuffles reshuffle as in tf.data)."""

    def __init__(self, dataset, device=None, pin_memory=False):
        super().__init__()
        self.dataset = dataset
        self.device = device
        self.pin_memory = pin_memory

    def __iter__(self):
        info = _tud.get_worker_info()
        if info is not None and info.num_workers > 1:
            raise RuntimeError("sluice.torch.IterableDataset: use num_workers=0; sluice runs "
                               "its own threads (worker processes would each run the whole "
                               "pipeline)")
        return iterate(self.dataset, self.device, self.pin_memory)

    def __len__(self):
        return len(self.dataset)
