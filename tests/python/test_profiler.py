"""sluice.profiler: traces of sluice iterations (the `with trace(...)` block and the
`sluice profile` command) and of stock PyTorch DataLoader pipelines
(sluice.profiler.torch), each validated by scripts/check_trace.py (every span on a
named track, every flow with both ends, timestamps monotonic per thread)."""
import json
import mmap
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import sluice
from sluice.data import Dataset

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import check_trace  # noqa: E402


def validate(path, **kw):
    r = check_trace.check(path, **kw)
    assert r["errors"] == [], r["errors"]
    return r


def op(summary, prefix):
    for o in summary["operators"]:
        if o["prefix"] == prefix:
            return o
    raise AssertionError("no operator %s in %s" % (prefix, [o["prefix"] for o in summary["operators"]]))


def test_trace_block_records_iterators_made_inside(tmp_path):
    ds = Dataset.range(100).map(lambda x: x * 2).batch(10).prefetch(2)
    path = str(tmp_path / "t.json")
    with sluice.profiler.trace(path, summary_json=str(tmp_path / "s.json")) as t:
        assert sum(1 for _ in ds) == 10
    assert t.summary["batches"]["count"] == 10
    assert t.summary["events"] * 32 == t.summary["event_bytes"]
    assert json.load(open(tmp_path / "s.json"))["batches"]["count"] == 10
    assert "Root (Prefetch)" in t.text
    validate(path, min_flows=10)
    # Outside the block nothing is recorded.
    assert sum(1 for _ in ds) == 10
    with pytest.raises(ValueError):
        with sluice.profiler.trace(path, sample=0):
            pass


def test_cli_profile(tmp_path, build_dir):
    spec = tmp_path / "spec.json"
    # The cast keeps the range's rows flowing one GetNext at a time (a batch straight over
    # a range gathers its rows in one call, and only the batch's spans are recorded);
    # unoptimized, so that the cast is not moved after the batch.
    spec.write_text(json.dumps({"version": 1,
                                "options": {"optimization": {
                                    "apply_default_optimizations": False}},
                                "dataset": [
        {"op": "Range", "attrs": {"start": 0, "stop": 5000, "step": 1}},
        {"op": "Map", "function": {"kernel": "cast", "attrs": {"dtype": "float32"}}},
        {"op": "Batch", "attrs": {"batch_size": 50}},
        {"op": "Prefetch", "attrs": {"buffer_size": 2}}]}))
    trace = tmp_path / "out.json"
    out = subprocess.run([str(build_dir / "sluice"), "profile", str(spec), "--trace", str(trace),
                          "--counters", "--sample", "2", "--json"],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    s = json.loads(out)
    assert s["batches"]["count"] == 100
    rng = [o for o in s["operators"] if o["op"] == "Range"][0]
    assert rng["self"]["count"] == 2501  # 1 in 2 of 5001 calls
    assert "task_clock_ns" in rng["counters"]
    validate(str(trace), min_flows=100, require_counters=["task_clock_ns"])
    bad = subprocess.run([str(build_dir / "sluice"), "profile", str(tmp_path / "missing.json")],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "missing.json" in bad.stderr


# ---- PyTorch DataLoader pipelines ----

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")
from torchvision import transforms  # noqa: E402


def image_folder(root, per_class=24, size=64):
    from PIL import Image
    rng = np.random.default_rng(1)
    for c in ("a", "b"):
        os.makedirs(root / c)
        for i in range(per_class):
            px = rng.integers(0, 255, (size, size, 3), dtype=np.uint8)
            Image.fromarray(px).save(root / c / ("%d.jpg" % i), quality=90)
    return str(root)


def imagenet_transforms():
    return transforms.Compose([
        transforms.RandomResizedCrop(32),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])


def test_torch_dataloader_imagenet_style(tmp_path):
    root = image_folder(tmp_path / "train")
    trace = str(tmp_path / "torch.json")
    prof = sluice.profiler.torch.Profiler(trace, html=str(tmp_path / "torch.html"))
    ds = torchvision.datasets.ImageFolder(root, transform=prof.transforms(imagenet_transforms()))
    loader = prof.dataloader(ds, batch_size=4, shuffle=True, num_workers=2)
    for epoch in range(2):
        n = sum(images.shape[0] for images, _ in loader)
        assert n == 48
    text, s = prof.finish()
    for i, name in enumerate(["RandomResizedCrop", "RandomHorizontalFlip", "ToTensor",
                              "Normalize"]):
        o = op(s, "DataLoader/Dataset/%s[%d]" % (name, i))
        assert o["self"]["count"] == 96, o  # one span per sample per transform
    assert op(s, "DataLoader/Dataset")["self"]["count"] == 96
    assert op(s, "DataLoader/Collate")["self"]["count"] == 24
    b = s["batches"]
    assert b["count"] == 24 and b["wait"]["count"] == 24 and b["delay"]["count"] == 24
    assert b["out_of_order"] >= 0
    r = validate(trace, min_flows=24, require_names=["ToTensor", "Collate"])
    assert r["threads"] >= 3  # the main process and the two workers (each epoch's)
    pids = {e["pid"] for e in json.load(open(trace))["traceEvents"]}
    assert len(pids) >= 3
    assert "data-charts-rendered" in open(tmp_path / "torch.html").read()


def test_torch_out_of_order_and_counters(tmp_path):
    class Slow(torch.utils.data.Dataset):
        def __len__(self):
            return 16

        def __getitem__(self, i):
            if i < 4:
                time.sleep(0.05)  # batch 0 (worker 0) finishes after batch 1 (worker 1)
            return np.zeros(8, dtype=np.uint8)

    def fresh_pages(x):
        m = mmap.mmap(-1, 4 << 20)  # 1024 pages never touched before
        for i in range(0, 4 << 20, 4096):
            m[i] = 1
        m.close()
        return x

    prof = sluice.profiler.torch.Profiler(str(tmp_path / "o.json"), counters=True)
    touch = prof.transforms(fresh_pages)
    wrapped = Slow()
    orig = wrapped.__getitem__

    class WithTransform(torch.utils.data.Dataset):
        def __len__(self):
            return 16

        def __getitem__(self, i):
            return touch(orig(i))

    loader = prof.dataloader(WithTransform(), batch_size=4, num_workers=2)
    assert sum(1 for _ in loader) == 4
    _, s = prof.finish()
    assert s["batches"]["out_of_order"] >= 1
    assert s["batches"]["delay"]["max_ns"] > 0
    toucher = op(s, "DataLoader/Dataset/fresh_pages[0]")
    assert toucher["counters_per_element"]["page_faults"] > 200  # transparent huge pages: fewer
    assert op(s, "DataLoader/Dataset")["counters_per_element"].get("page_faults", 0) < 50
    validate(str(tmp_path / "o.json"), min_flows=4)


def test_torch_cost_per_event(tmp_path):
    prof = sluice.profiler.torch.Profiler(str(tmp_path / "c.json"))
    f = prof.transforms(lambda x: x)
    n = 20000
    t0 = time.perf_counter()
    for i in range(n):
        f(i)
    profiled = time.perf_counter() - t0
    g = lambda x: x  # noqa: E731
    t0 = time.perf_counter()
    for i in range(n):
        g(i)
    plain = time.perf_counter() - t0
    per_event_us = (profiled - plain) / n * 1e6
    print("sluice.profiler.torch: %.2f us per recorded span" % per_event_us)
    _, s = prof.finish()
    assert op(s, "DataLoader/Dataset/<lambda>[0]")["self"]["count"] == n
    assert per_event_us < 50  # Lotus: about 200 us per log line; we measure ~1-3 us


def test_html_summary_renders_in_chromium(tmp_path, source_dir):
    import shutil
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        pytest.skip("chromium not installed")
    page = tmp_path / "profile.html"
    ds = Dataset.range(2000).map(lambda x: x + 1).batch(20).prefetch(2)
    with sluice.profiler.trace(str(tmp_path / "t.json"), html=str(page)):
        assert sum(1 for _ in ds) == 100
    r = subprocess.run([sys.executable, str(source_dir / "scripts" / "check_html.py"), str(page),
                        "--require", 'data-charts-rendered="4"',
                        "--screenshot", str(tmp_path / "shot.png")],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr + r.stdout
    assert (tmp_path / "shot.png").stat().st_size > 1000
