"""Iterator save / restore from Python."""
import numpy as np
import pytest

import sluice
from sluice.data import Dataset


def make():
    return (Dataset.range(200).shuffle(50, seed=3).map(lambda x: x * 2)
            .batch(7).prefetch(2))


def test_restore_continues_with_same_elements():
    full = [b.tolist() for b in make()]
    it = iter(make())
    head = [next(it).tolist() for _ in range(11)]
    state = it.save()
    assert isinstance(state, bytes) and len(state) > 0
    rest = [b.tolist() for b in it]
    assert head + rest == full
    it2 = make().make_iterator()
    it2.restore(state)
    assert [b.tolist() for b in it2] == rest


def test_restore_kernel_pipeline_at_every_position():
    ds = Dataset.range(30).map(sluice.cast("float32")).batch(4)
    full = [b.tolist() for b in ds]
    for k in range(len(full) + 1):
        it = iter(ds)
        for _ in range(k):
            next(it)
        s = it.save()
        it2 = iter(ds)
        it2.restore(s)
        assert [b.tolist() for b in it2] == full[k:]


def test_bad_checkpoints_raise():
    it = iter(Dataset.range(10).batch(2))
    next(it)
    state = it.save()
    corrupt = state[:-3] + bytes([state[-3] ^ 0xFF]) + state[-2:]
    with pytest.raises(sluice.DataLossError):
        iter(Dataset.range(10).batch(2)).restore(corrupt)
    with pytest.raises(sluice.Error):
        iter(Dataset.range(10).map(lambda x: x)).restore(state)  # another pipeline
