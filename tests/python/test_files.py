"""Options.files: confinement of a pipeline's file access (docs/files.md)."""
import os

import pytest

import sluice


def test_files_option_round_trips_and_merges():
    o = sluice.data.Options()
    assert o.files.allowed_roots is None
    o.files.allowed_roots = ["/data"]
    o.files.allowed_write_roots = []
    ds = sluice.data.Dataset.range(3).with_options(o)
    got = ds.options()
    assert got.files.allowed_roots == ["/data"]
    assert got.files.allowed_write_roots == []
    with pytest.raises(TypeError):
        o.files.allowed_roots = "/data"  # a string, not a list of directories


def test_reads_outside_the_roots_are_refused(tmp_path):
    inside = tmp_path / "in"
    outside = tmp_path / "out"
    inside.mkdir()
    outside.mkdir()
    (inside / "a.txt").write_text("ok\n")
    (outside / "s.txt").write_text("secret\n")
    o = sluice.data.Options()
    o.files.allowed_roots = [str(inside)]
    ok = sluice.data.TextLineDataset([str(inside / "a.txt")]).with_options(o)
    assert [bytes(x) for x in ok] == [b"ok"]
    for path in [outside / "s.txt", inside / ".." / "out" / "s.txt"]:
        bad = sluice.data.TextLineDataset([str(path)]).with_options(o)
        with pytest.raises(sluice.PermissionDeniedError, match="allowed roots"):
            list(bad)


def test_devices_are_never_read():
    with pytest.raises(sluice.InvalidArgumentError, match="regular file"):
        list(sluice.data.TextLineDataset(["/dev/zero"]))
