"""torch tensors through DLPack: no copy, DataLoader adapter, pinned memory."""
import gc

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import sluice  # noqa: E402
import sluice.torch as st  # noqa: E402
from sluice.data import Dataset  # noqa: E402


def pipeline():
    images = np.random.default_rng(0).integers(0, 255, (64, 4, 4, 1), dtype=np.uint8)
    labels = np.arange(64, dtype=np.int64)
    return images, labels, (Dataset.from_tensor_slices({"image": images, "label": labels})
                            .map(sluice.image.normalize(mean=0.5, std=0.5, layout="CHW"))
                            .batch(16))


def test_dlpack_roundtrip_shares_memory():
    ds = Dataset.range(100).batch(50)
    it = ds._tensor_iterator()
    t = next(it)
    assert isinstance(t, sluice.Tensor)
    a = np.asarray(t)
    x = torch.from_dlpack(t)                    # the __dlpack__ protocol
    y = torch.utils.dlpack.from_dlpack(t.__dlpack__())  # a bare capsule
    assert x.data_ptr() == a.ctypes.data == t.data_ptr == y.data_ptr()
    assert x.dtype == torch.int64 and tuple(x.shape) == (50,)
    assert torch.equal(x, torch.arange(50))
    use = t.buffer_use_count
    del x, y
    assert t.buffer_use_count == use - 2      # torch released its references


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.int64,
                                   np.float16, np.float32, np.float64, np.bool_])
def test_dlpack_dtypes(dtype):
    v = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
    t = next(Dataset.from_tensors(v)._tensor_iterator())
    if dtype is np.bool_ and torch.__version__ < "2.1":
        # Debian's torch 1.13 rejects DLPack's kDLBool: sluice.torch uses the numpy view.
        with pytest.raises(RuntimeError):
            torch.from_dlpack(t)
        x = st.to_torch(t)
    else:
        x = torch.from_dlpack(t)
    assert x.dtype == getattr(torch, np.dtype(dtype).name if dtype is not np.bool_ else "bool")
    assert x.data_ptr() == t.data_ptr  # no copy
    np.testing.assert_array_equal(x.numpy(), v)


def test_iterate_yields_structure():
    images, labels, ds = pipeline()
    batches = list(st.iterate(ds))
    assert len(batches) == 4
    b = batches[1]
    assert b["image"].dtype == torch.float32 and tuple(b["image"].shape) == (16, 1, 4, 4)
    ref = (torch.from_numpy(images[16:32]).permute(0, 3, 1, 2).float() / 255 - 0.5) / 0.5
    assert torch.allclose(b["image"], ref, atol=1e-6)
    assert torch.equal(b["label"], torch.from_numpy(labels[16:32]))


def test_dataloader_adapter():
    _, labels, ds = pipeline()
    loader = torch.utils.data.DataLoader(st.IterableDataset(ds), batch_size=None, num_workers=0)
    assert len(loader) == 4
    seen = torch.cat([b["label"] for b in loader])
    assert torch.equal(seen, torch.from_numpy(labels))
    seen2 = torch.cat([b["label"] for b in loader])  # a second epoch: a fresh iterator
    assert torch.equal(seen2, seen)


def test_pin_memory():
    _, _, ds = pipeline()
    if not torch.cuda.is_available():
        # pin_memory needs CUDA in torch: sluice warns once and leaves memory pageable.
        st._warned_pin = False
        with pytest.warns(RuntimeWarning, match="pin_memory"):
            b = next(st.iterate(ds, pin_memory=True))
        assert not b["image"].is_pinned()
        pytest.skip("CUDA not available: pinned memory checked only for the fallback")
    b = next(st.iterate(ds, pin_memory=True))
    assert b["image"].is_pinned()
    g = next(st.iterate(ds, device="cuda", pin_memory=True))
    assert g["image"].is_cuda


def test_strings_pass_through():
    ds = Dataset.from_tensor_slices((np.array([b"a", b"b"]), np.arange(2))).batch(2)
    s, n = next(st.iterate(ds))
    assert list(s) == [b"a", b"b"] and torch.equal(n, torch.arange(2))


def test_small_tensors_export_memory_that_outlives_them():
    # A scalar's data is held inside the sluice tensor object (no buffer; tensor.h): the
    # numpy view and the DLPack capsule must point at memory their own reference keeps,
    # not at the tensor they were made from.
    views, tensors = [], []
    for t in Dataset.range(7, 12)._tensor_iterator():
        assert isinstance(t, sluice.Tensor) and t.shape == ()
        views.append(t.numpy())
        del t
    for t in Dataset.range(7, 12)._tensor_iterator():
        tensors.append(torch.from_dlpack(t))
        del t
    gc.collect()
    junk = [sluice.Tensor(np.full(1, -1, dtype=np.int64)) for _ in range(100)]
    assert [int(v) for v in views] == [7, 8, 9, 10, 11]
    assert [int(x) for x in tensors] == [7, 8, 9, 10, 11]
    assert len(junk) == 100
