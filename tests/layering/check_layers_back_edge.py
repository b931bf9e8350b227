#!/usr/bin/python3
"""scripts/check_layers.py fails, naming the edge, on deliberate back edges.

Copies the tree's include/ and src/ into a temporary directory, checks that the copy is
clean, then adds one back edge at a time (core including the API layer, a public header
including a runtime header, framework including ops, ops including the optimizer) and
asserts that the script exits 1 and prints that file, line and edge. Then builds tiny
layer archives in which core calls a function only the API layer defines (an include
check cannot see that: the declaration could sit anywhere) and asserts that --archives
reports it. Run by CTest as layers.check_fails_on_back_edge.
"""

import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "check_layers.py")

# (file to edit, include to append, what the report must say)
EDGES = [
    ("src/core/status.cc", '#include "api/builtins.h"',
     'src/core/status.cc:{line}: core -> api: #include "api/builtins.h"'),
    ("include/sluice/tensor.h", '#include "runtime/runtime.h"',
     'include/sluice/tensor.h:{line}: public -> src: #include "runtime/runtime.h"'),
    ("src/graph/registry.cc", '#include "ops/ops.h"',
     'src/graph/registry.cc:{line}: framework -> ops: #include "ops/ops.h"'),
    ("src/ops/builtins.cc", '#include "optimizer/optimizer.h"',
     'src/ops/builtins.cc:{line}: ops -> optimizer: #include "optimizer/optimizer.h"'),
]


def run(root):
    return subprocess.run([sys.executable, SCRIPT, "--root", root], capture_output=True,
                          text=True)


def main():
    failures = 0
    with tempfile.TemporaryDirectory(prefix="sluice_layers_") as tmp:
        for top in ("include", "src"):
            shutil.copytree(os.path.join(ROOT, top), os.path.join(tmp, top))
        clean = run(tmp)
        if clean.returncode != 0:
            print("FAIL: the unmodified copy does not pass:\n" + clean.stdout + clean.stderr)
            return 1
        for rel, include, expected in EDGES:
            path = os.path.join(tmp, rel)
            with open(path) as f:
                original = f.read()
            text = original if original.endswith("\n") else original + "\n"
            line = text.count("\n") + 1
            with open(path, "w") as f:
                f.write(text + include + "\n")
            r = run(tmp)
            want = expected.format(line=line)
            if r.returncode != 1 or want not in r.stdout:
                failures += 1
                print(f"FAIL: {rel} + {include}: exit {r.returncode}, wanted 1 and {want!r}; "
                      f"got:\n{r.stdout}{r.stderr}")
            else:
                print(f"ok: {r.stdout.strip()}")
            with open(path, "w") as f:
                f.write(original)
        failures += check_archives(tmp)
    return 1 if failures else 0


def check_archives(tmp):
    """A call from core up to api in the layer archives is reported."""
    lib = os.path.join(tmp, "lib")
    os.makedirs(lib)
    sources = {
        "core": "void ApiOnlyFunction();\nvoid CoreFunction() { ApiOnlyFunction(); }\n",
        "api": "void ApiOnlyFunction() {}\n",
    }
    for layer in ("core", "formats", "framework", "ops", "optimizer", "autotune", "api"):
        src = os.path.join(lib, layer + ".cc")
        with open(src, "w") as f:
            f.write(sources.get(layer, f"int {layer}_marker = 1;\n"))
        obj = src[:-3] + ".o"
        subprocess.run(["c++", "-c", src, "-o", obj], check=True)
        subprocess.run(["ar", "rcs", os.path.join(lib, f"libsluice_{layer}.a"), obj],
                       check=True)
    r = subprocess.run([sys.executable, SCRIPT, "--root", tmp, "--archives", lib],
                       capture_output=True, text=True)
    want = "libsluice_core.a: core -> api: ApiOnlyFunction()"
    if r.returncode != 1 or want not in r.stdout:
        print(f"FAIL: a call from core to api: exit {r.returncode}, wanted 1 and {want!r}; "
              f"got:\n{r.stdout}{r.stderr}")
        return 1
    print(f"ok: {r.stdout.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
