#!/usr/bin/env python3
"""Loads an HTML report in headless Chromium and checks that it rendered cleanly.

Used by the tests of every HTML page sluice writes (the doctor's report, the profiler's
summary). The page is loaded from disk with no network; its scripts run; then:

  * every message the page wrote to the console is an error here (reports are silent
    when they work; an uncaught exception shows up as a console message too);
  * each --require string must occur in the DOM after the scripts ran (a page marks
    what it drew, e.g. data-charts-rendered="4" on <body>);
  * with --screenshot, a PNG of the page is written and must not be blank.

Exit status 0 when all checks hold, 1 otherwise (the reason on stderr), 2 when
Chromium is not installed. Prints a JSON summary on stdout.

  scripts/check_html.py report.html --require 'data-charts-rendered="4"' \
      --screenshot shot.png --size 1280,2000
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

CONSOLE = re.compile(r":CONSOLE(?::|\()\d+\)?\] (.*)$")


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run_chromium(chromium, page, extra, timeout):
    profile = tempfile.mkdtemp(prefix="sluice-chromium-")
    try:
        cmd = [
            chromium, "--headless", "--no-sandbox", "--disable-gpu",
            "--no-first-run", "--disable-extensions", "--disable-background-networking",
            "--enable-logging=stderr", "--v=0", f"--user-data-dir={profile}",
            "--virtual-time-budget=5000",
        ] + extra + ["file://" + os.path.abspath(page)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env=dict(os.environ, DBUS_SESSION_BUS_ADDRESS="disabled:"))
        return proc
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def png_is_blank(path):
    """True when the PNG is tiny or a single colour (decoded without extra packages
    when PIL is missing: then only the size is checked)."""
    if os.path.getsize(path) < 100:
        return True
    try:
        from PIL import Image  # Debian's python3-pil
    except ImportError:
        return False
    with Image.open(path) as im:
        colors = im.convert("RGB").getcolors(maxcolors=4)
        return colors is not None and len(colors) <= 1


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("page")
    ap.add_argument("--require", action="append", default=[],
                    help="a string the rendered DOM must contain (repeatable)")
    ap.add_argument("--screenshot", help="write a PNG of the page here")
    ap.add_argument("--size", default="1280,1600", help="window size W,H for the screenshot")
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args()

    chromium = find_chromium()
    if chromium is None:
        print("check_html: chromium is not installed (Debian package `chromium`)",
              file=sys.stderr)
        return 2
    if not os.path.isfile(args.page):
        print(f"check_html: no such page: {args.page}", file=sys.stderr)
        return 1

    failures = []
    dom = run_chromium(chromium, args.page, ["--dump-dom"], args.timeout)
    console = [m.group(1) for line in dom.stderr.splitlines()
               if (m := CONSOLE.search(line))]
    if dom.returncode != 0:
        failures.append(f"chromium exited with {dom.returncode}")
    for msg in console:
        failures.append(f"console: {msg}")
    for want in args.require:
        if want not in dom.stdout:
            failures.append(f"the rendered page lacks {want!r}")

    if args.screenshot:
        out = os.path.abspath(args.screenshot)
        if os.path.exists(out):
            os.remove(out)
        shot = run_chromium(chromium, args.page,
                            [f"--screenshot={out}", f"--window-size={args.size}",
                             "--hide-scrollbars"], args.timeout)
        if not os.path.exists(out):
            failures.append(f"no screenshot written (chromium exit {shot.returncode})")
        elif png_is_blank(out):
            failures.append(f"the screenshot {out} is blank")

    print(json.dumps({"page": args.page, "console": console, "dom_bytes": len(dom.stdout),
                      "required": args.require, "screenshot": args.screenshot,
                      "ok": not failures}, indent=1))
    for f in failures:
        print(f"check_html: {args.page}: {f}", file=sys.stderr)
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
