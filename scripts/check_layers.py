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
With --archives BUILD_DIR it also reads the layers' static libraries there
(libsluice_<layer>.a, nm) and fails on a symbol a layer uses that only a layer it may not
use defines: a call up that an include check cannot see (a function declared below and
defined above), printed as
    libsluice_<from>.a: <from> -> <to>: <symbol>
Exit status: 0 when clean, 1 on any error, 2 on bad usage.

    /usr/bin/python3 scripts/check_layers.py [--root DIR] [--archives BUILD_DIR]
"""

import argparse
import os
import re
import subprocess
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
    # Systems built on the API: the profiler, the bottleneck doctor, the service. Each
    # may use the whole engine; none may use another (tools join them).
    "profiler": {"public", "core", "formats", "framework", "ops", "optimizer", "autotune",
                 "api", "profiler"},
    "plumber": {"public", "core", "formats", "framework", "ops", "optimizer", "autotune",
                "api", "plumber"},
    "service": {"public", "core", "formats", "framework", "ops", "optimizer", "autotune",
                "api", "service"},
    "tool": {"public", "core", "formats", "framework", "ops", "optimizer", "autotune", "api",
             "profiler", "plumber", "service", "tool"},
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
    "profiler": "profiler",
    "plumber": "plumber",
    "service": "service",
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


# The static library of each layer in the build tree (CMakeLists.txt).
ARCHIVES = {layer: f"libsluice_{layer}.a" for layer in
            ("core", "formats", "framework", "ops", "optimizer", "autotune", "api",
             "profiler", "plumber", "service")}
# Layers a build may lack (not yet written, or switched off).
OPTIONAL_ARCHIVES = {"profiler", "plumber", "service"}


def nm(archive, *flags):
    out = subprocess.run(["nm", "-g", *flags, archive], capture_output=True, text=True,
                         check=True).stdout
    return out.splitlines()


def check_archives(build):
    """Symbols a layer's archive leaves undefined that only a forbidden layer defines."""
    defined, undefined = {}, {}
    for layer, name in ARCHIVES.items():
        path = os.path.join(build, name)
        if not os.path.exists(path):
            if layer in OPTIONAL_ARCHIVES:
                continue  # a layer this build leaves out
            return [f"{path}: missing (build the library first)"]
        defined[layer] = {f[2] for f in (l.split() for l in nm(path, "--defined-only"))
                          if len(f) == 3}
        undefined[layer] = {f[1] for f in (l.split() for l in nm(path, "--undefined-only"))
                            if len(f) == 2 and f[0] == "U"}
    errors = []
    for layer in defined:
        for sym in sorted(undefined[layer] - defined[layer]):
            owners = [o for o in defined if o != layer and sym in defined[o]]
            if owners and not any(o in ALLOWED[layer] for o in owners):
                name = subprocess.run(["c++filt", sym], capture_output=True,
                                      text=True).stdout.strip() or sym
                errors.append(f"{ARCHIVES[layer]}: {layer} -> {'/'.join(owners)}: {name}")
    return errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."),
                        help="the source tree (default: this script's repository)")
    parser.add_argument("--archives", metavar="BUILD_DIR",
                        help="also check the layers' static libraries in BUILD_DIR")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    if not os.path.isdir(os.path.join(root, "src")) or not os.path.isdir(
            os.path.join(root, "include")):
        print(f"check_layers: {root} has no src/ and include/", file=sys.stderr)
        return 2
    scanned, errors = check(root)
    if args.archives:
        errors += check_archives(args.archives)
    for e in errors:
        print(e)
    if errors:
        print(f"check_layers: {len(errors)} include(s) break the layering "
              f"(docs/architecture.md)", file=sys.stderr)
        return 1
    what = " and every symbol the libraries use" if args.archives else ""
    print(f"check_layers: {scanned} files, every include{what} points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
