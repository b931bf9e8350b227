"""sluice.profiler.torch: the profiler for stock PyTorch DataLoader pipelines.

    import sluice.profiler
    prof = sluice.profiler.torch.Profiler("out.json", counters=True)
    tf = prof.transforms(transforms.Compose([...]))        # a span per transform per sample
    ds = torchvision.datasets.ImageFolder(root, transform=tf)
    loader = prof.dataloader(ds, batch_size=128, shuffle=True, num_workers=2)
    for images, labels in loader:                           # wait and delay per batch
        ...
    text, summary = prof.finish()                           # merges the event files

Unmodified PyTorch: ``prof.dataloader`` builds a ``torch.utils.data.DataLoader`` over
wrappers. In each worker process the dataset's ``__getitem__``, every transform and the
collate function record spans (a batch's production runs from its first sample to the end
of its collate: ready); the main process records when it asked for each batch and when
it got it (taken). Every process writes its own event file (in ``<trace>.events.d/``);
``finish`` merges them into one Chrome trace and the same summary as sluice's own
pipelines (docs/profiler.md). Out-of-order arrivals: batches that became ready before a
batch of a lower index (the DataLoader reorders them).

Counters per transform (``counters=True``) come from the same perf_event_open code as
sluice's (the native module). Worker files are closed when the workers exit (the end of
an epoch, or when a persistent_workers loader is deleted): call ``finish`` after that.
"""

import gc
import multiprocessing.util
import os
import shutil
import time

import torch.utils.data as _tud

from sluice import _sluice
from sluice import profiler as _profiler

__all__ = ["Profiler"]

_now = time.monotonic_ns  # CLOCK_MONOTONIC, the clock of sluice's own spans


class _ProcessLog:
    """The event log of one process, opened on first use there."""

    def __init__(self, directory, counters):
        self.pid = os.getpid()
        self.log = _sluice._ProfilerEventLog(
            os.path.join(directory, "events-%d" % self.pid), counters)
        self.names = {}
        self.batch = -1
        self.batch_start = None
        self.sample = -1
        self.closed = False
        multiprocessing.util.Finalize(self, _ProcessLog._close_if_mine, args=(self,),
                                      exitpriority=100)

    def _close_if_mine(self):
        if os.getpid() == self.pid and not self.closed:
            self.closed = True
            self.log.close()

    def name(self, op, prefix):
        key = (op, prefix)
        nid = self.names.get(key)
        if nid is None:
            nid = self.names[key] = self.log.name(op, prefix)
        return nid


class Profiler:
    """Records a DataLoader pipeline into ``trace`` (see the module's docstring)."""

    def __init__(self, trace, *, counters=False, summary_json=None, html=None):
        self.trace = trace
        self.directory = trace + ".events.d"
        self.counters = bool(counters)
        self.summary_json = summary_json
        self.html = html
        shutil.rmtree(self.directory, ignore_errors=True)
        os.makedirs(self.directory)
        self._local = None

    def __getstate__(self):  # workers started with spawn get the settings, not the log
        d = dict(self.__dict__)
        d["_local"] = None
        return d

    def _log(self):
        if self._local is None or self._local.pid != os.getpid():
            self._local = _ProcessLog(self.directory, self.counters)
        return self._local

    def _record(self, op, prefix, index, fn, *args):
        pl = self._log()
        nid = pl.name(op, prefix)
        if self.counters:
            pl.log.begin_counters()
        t0 = _now()
        ok = False
        try:
            out = fn(*args)
            ok = True
            return out
        finally:
            t1 = _now()
            pl.log.span(nid, index, t0, t1, ok)
            if self.counters:
                pl.log.end_counters(nid, index, t1)

    # ---- the pipeline's parts ----
    def transforms(self, transform, prefix="DataLoader/Dataset"):
        """A transform (a Compose, or any callable) that records a span per call; a
        Compose's parts each get their own."""
        parts = getattr(transform, "transforms", None)
        if isinstance(parts, (list, tuple)):
            return _Compose([_Transform(self, t, "%s/%s[%d]" % (prefix, _op(t), i))
                             for i, t in enumerate(parts)])
        return _Transform(self, transform, "%s/%s[0]" % (prefix, _op(transform)))

    def dataloader(self, dataset, batch_size=1, shuffle=False, sampler=None,
                   drop_last=False, collate_fn=None, **kwargs):
        """A torch DataLoader over `dataset` whose batches are recorded."""
        if sampler is None:
            sampler = (_tud.RandomSampler(dataset) if shuffle
                       else _tud.SequentialSampler(dataset))
        batches = _TaggedBatches(_tud.BatchSampler(sampler, batch_size, drop_last))
        loader = _tud.DataLoader(_Dataset(self, dataset), batch_sampler=batches,
                                 collate_fn=_Collate(self, collate_fn or _tud.default_collate),
                                 **kwargs)
        return _Loader(self, loader)

    def finish(self):
        """Closes this process's log and merges every process's events into the trace;
        returns (summary text, summary dict)."""
        if self._local is not None and self._local.pid == os.getpid():
            self._local._close_if_mine()
        paths = sorted(os.path.join(self.directory, f) for f in os.listdir(self.directory))
        return _profiler.export(paths, self.trace, self.summary_json, self.html)


def _op(fn):
    return type(fn).__name__ if not hasattr(fn, "__name__") else fn.__name__


class _Transform:
    def __init__(self, prof, fn, prefix):
        self.prof, self.fn, self.prefix, self.op = prof, fn, prefix, _op(fn)

    def __call__(self, x):
        pl = self.prof._log()
        return self.prof._record(self.op, self.prefix, pl.sample, self.fn, x)

    def __repr__(self):
        return "profiled(%r)" % (self.fn,)


class _Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x


class _TaggedBatches:
    """Yields each batch's indices tagged with the batch's number in this epoch."""

    def __init__(self, batch_sampler):
        self.batch_sampler = batch_sampler

    def __iter__(self):
        for b, indices in enumerate(self.batch_sampler):
            yield [(b, i) for i in indices]

    def __len__(self):
        return len(self.batch_sampler)


class _Dataset(_tud.Dataset):
    def __init__(self, prof, dataset):
        self.prof, self.dataset = prof, dataset
        self.op = type(dataset).__name__

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, key):
        batch, index = key
        pl = self.prof._log()
        if batch != pl.batch or pl.batch_start is None:
            pl.batch, pl.batch_start = batch, _now()
        pl.sample = index
        return self.prof._record(self.op, "DataLoader/Dataset", index,
                                 self.dataset.__getitem__, index)


class _Collate:
    def __init__(self, prof, fn):
        self.prof, self.fn = prof, fn

    def __call__(self, samples):
        pl = self.prof._log()
        out = self.prof._record("Collate", "DataLoader/Collate", pl.batch, self.fn, samples)
        pl.log.batch_ready(pl.batch, pl.batch_start, _now())
        pl.batch_start = None
        return out


class _Loader:
    """Iterates the DataLoader, recording when each batch was asked for and taken."""

    def __init__(self, prof, loader):
        self.prof, self.loader = prof, loader

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        # Garbage of this process must not be collected in the forked workers (a sluice
        # iterator destroyed there would wait for threads that only exist here): the
        # workers start inside iter(), with every object of ours frozen (gc.freeze, the
        # pattern Python documents for fork), and the parent unfreezes them after.
        gc.freeze()
        try:
            it = iter(self.loader)
        finally:
            gc.unfreeze()
        pl = self.prof._log()
        k = 0
        while True:
            t0 = _now()
            try:
                batch = next(it)
            except StopIteration:
                return
            t1 = _now()
            pl.log.batch_asked(k, t0, t1)
            k += 1
            yield batch
