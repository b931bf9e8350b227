#!/usr/bin/python3
"""Checks that every #include "..." under include/ and src/ points down the layers.

The layers (docs/architecture.md; each is a CMake library, CMakeLists.txt):

    public     include/sluice/            what users include
    core       src/core/                  -> public
    formats    src/formats/               -> core
    framework  src/graph/ + src/runtime/  -> core
    ops        src/ops/                   -> framework, formats
    optimizer  src/optimizer/             -> framework
    autotune   src/autotune/              -> framework
    api        src/api/                   -> optimizer, autotune, ops (and all below)
    tool       src/datagen/ (and tools/, python/, tests/, bench/, examples/, fuzz/,
               which are not scanned): above everything

An include that points up or sideways (formats <-> framework, ops <-> optimizer <->
autotune), an include of anything but include/sluice/ from a public header, and an include
of the data generator from a layer are errors, printed as
    path:line: <from layer> -> <to layer>: #include "x" (<from layer> may include: ...)
Exit status: 0 when clean, 1 on any error, 2 on bad usage.

    /usr/bin/python3 scripts/check_layers.py [--root DIR]
"""

import argparse
import os
import re
import sys

# Which layers each layer may include (itself included). Transitive edges are spelled
# out: api may include formats because api -> ops -> formats.
ALLOWED = {
    "public": {"public"},
    "core": {"public", "core"},
    "formats": {"public", "core", "formats"},
    "framework": {"public", "core", "framework"},
    "ops": {"public", "core", "formats", "framework", "ops"},
    "optimizer": {"public", "core", "framework", "optimizer"},
    "autotune": {"public", "core", "framework", "autotune"},
    "api": {"public", "core", "formats", "framework", "ops", "optimizer", "autotune", "api"},
    "tool": {"public", "core", "formats", "framework", "ops", "optimizer", "autotune", "api",
             "tool"},
}

# The first component of a path under src/ (or "sluice" under include/) -> its layer.
DIR_LAYER = {
    "sluice": "public",
    "core": "core",
    "formats": "formats",
    "graph": "framework",
    "runtime": "framework",
    "ops": "ops",
    "optimizer": "optimizer",
    "autotune": "autotune",
    "api": "api",
    "datagen": "tool",
}

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE_EXTS = (".h", ".cc", ".cpp", ".hpp", ".inc")


def layer_of_file(rel):
    """The layer of a file given by its path relative to the root, or None."""
    parts = rel.split(os.sep)
    if len(parts) >= 2 and parts[0] == "include":
        return "public"
    if len(parts) >= 3 and parts[0] == "src":
        return DIR_LAYER.get(parts[1])
    return None


def layer_of_include(root, including_rel, target):
    """The layer an include names: as written from src/ or include/, or relative to the
    including file. None for what is neither (system-like or generated elsewhere)."""
    first = target.split("/", 1)[0]
    if "/" in target and first in DIR_LAYER:
        return DIR_LAYER[first]
    local = os.path.normpath(os.path.join(os.path.dirname(including_rel), target))
    if os.path.exists(os.path.join(root, local)):
        return layer_of_file(local)
    return None


def check(root):
    errors = []
    scanned = 0
    for top in ("include", "src"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(SOURCE_EXTS):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                layer = layer_of_file(rel)
                if layer is None:
                    errors.append(f"{rel}:1: not in any layer (add its directory to "
                                  f"scripts/check_layers.py)")
                    continue
                scanned += 1
                with open(path, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE_RE.match(line)
                        if not m:
                            continue
                        target = m.group(1)
                        if layer == "public" and not target.startswith("sluice/"):
                            errors.append(
                                f'{rel}:{lineno}: public -> src: #include "{target}" '
                                f"(public headers include only sluice/...)")
                            continue
                        to = layer_of_include(root, rel, target)
                        if to is None or to in ALLOWED[layer]:
                            continue
                        may = ", ".join(sorted(ALLOWED[layer] - {layer}))
                        errors.append(f'{rel}:{lineno}: {layer} -> {to}: #include "{target}" '
                                      f"({layer} may include: {may})")
    return scanned, errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."),
                        help="the source tree (default: this script's repository)")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    if not os.path.isdir(os.path.join(root, "src")) or not os.path.isdir(
            os.path.join(root, "include")):
        print(f"check_layers: {root} has no src/ and include/", file=sys.stderr)
        return 2
    scanned, errors = check(root)
    for e in errors:
        print(e)
    if errors:
        print(f"check_layers: {len(errors)} include(s) break the layering "
              f"(docs/architecture.md)", file=sys.stderr)
        return 1
    print(f"check_layers: {scanned} files, every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
