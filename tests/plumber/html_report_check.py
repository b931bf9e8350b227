#!/usr/bin/env python3
"""The doctor's HTML report in a real browser: `sluice plumber <spec> --html` writes it,
scripts/check_html.py loads it in headless Chromium and requires its three charts, no
console message and a non-blank screenshot.

  html_report_check.py BUILD_DIR SOURCE_DIR
Exit 0 when the page passes, 77 (skipped) when Chromium or the data is missing."""
import os
import subprocess
import sys
import tempfile

build, source = sys.argv[1], sys.argv[2]
spec = os.path.join(source, "bench/plumber/fashion_mnist_naive.json")
if not os.path.exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"):
    print("skipped: no Fashion-MNIST data (dataset-fashion-mnist)")
    sys.exit(77)
with tempfile.TemporaryDirectory(prefix="plumber-html-") as tmp:
    page = os.path.join(tmp, "report.html")
    subprocess.run([os.path.join(build, "sluice"), "plumber", spec, "--seconds", "0.5",
                    "--cores", "2", "--measure", "--html", page],
                   check=True, timeout=120, stdout=subprocess.DEVNULL)
    rc = subprocess.run([sys.executable, os.path.join(source, "scripts/check_html.py"), page,
                         "--require", 'data-charts-rendered="3"',
                         "--require", "Bottlenecks, tightest first",
                         "--screenshot", os.path.join(tmp, "shot.png")], timeout=120).returncode
    sys.exit(77 if rc == 2 else rc)
