"""Shared fixtures for the Python tests: the package comes from $PYTHONPATH (the CTest
entries point it at <build>/python), the C++ parity helper from $SLUICE_BUILD_DIR."""
import os
import pathlib

import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("SLUICE_SOURCE_DIR",
                                         pathlib.Path(__file__).resolve().parents[2]))
BUILD_DIR = pathlib.Path(os.environ.get("SLUICE_BUILD_DIR", SOURCE_DIR / "build"))
FASHION = pathlib.Path("/usr/share/datasets/fashion-mnist")


@pytest.fixture
def source_dir():
    return SOURCE_DIR


@pytest.fixture
def build_dir():
    return BUILD_DIR


def need(path):
    return pytest.mark.skipif(not pathlib.Path(path).exists(), reason="%s missing" % path)
