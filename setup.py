"""Builds the sluice extension with CMake (no network: Debian's pybind11, setuptools).

Environment:
  SLUICE_CMAKE_BUILD_DIR  reuse this CMake build directory (default build-pip/cmake)
  SLUICE_BUILD_JOBS       parallel build jobs (default: the cores available)
"""
import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent
BUILD_BASE = "build-pip"  # not build/: that is the CMake tree's usual name


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = pathlib.Path(os.environ.get("SLUICE_CMAKE_BUILD_DIR",
                                                ROOT / BUILD_BASE / "cmake"))
        jobs = os.environ.get("SLUICE_BUILD_JOBS", str(len(os.sched_getaffinity(0))))
        if not (build_dir / "CMakeCache.txt").exists():
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            subprocess.check_call(
                ["cmake", "-S", str(ROOT), "-B", str(build_dir), *generator,
                 "-DCMAKE_BUILD_TYPE=Release", "-DSLUICE_BUILD_TESTS=OFF",
                 "-DSLUICE_BUILD_BENCH=OFF", "-DPython3_EXECUTABLE=" + sys.executable])
        subprocess.check_call(["cmake", "--build", str(build_dir), "--target", "sluice_python",
                               "-j", jobs])
        built = sorted((build_dir / "python" / "sluice").glob("_sluice*.so"))
        if not built:
            raise RuntimeError("sluice: CMake did not produce _sluice*.so in %s" % build_dir)
        dest = pathlib.Path(self.get_ext_fullpath(ext.name))
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[-1], dest)


(ROOT / BUILD_BASE).mkdir(exist_ok=True)
setup(
    packages=["sluice"],
    package_dir={"": "python"},
    ext_modules=[CMakeExtension("sluice._sluice")],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": BUILD_BASE}, "egg_info": {"egg_base": BUILD_BASE}},
    zip_safe=False,
)
