"""One stats schema: Python's Iterator.stats(), the CLI's --json (sluice bench) and the
benchmarks print the same fields (src/runtime/proto/stats.proto)."""
import json
import os
import subprocess

import sluice
from sluice.data import Dataset


def _cli():
    return os.path.join(os.environ["SLUICE_BUILD_DIR"], "sluice")


def test_python_and_cli_share_the_stats_schema(tmp_path):
    spec = tmp_path / "range.json"
    spec.write_text(json.dumps({"dataset": [
        {"op": "Range", "attrs": {"stop": 100000}},
        {"op": "Map", "function": {"kernel": "cast", "attrs": {"dtype": "float32"}}},
        {"op": "Batch", "attrs": {"batch_size": 10}},
        {"op": "Repeat", "attrs": {}}]}))
    out = subprocess.run([_cli(), "bench", str(spec), "--seconds", "0.2", "--warmup", "0",
                          "--json"], check=True, capture_output=True, text=True, timeout=120)
    cli = json.loads(out.stdout)["stats"]

    ds = Dataset.range(100000).map(lambda x: x).batch(10).repeat()
    it = iter(ds)
    next(it)
    py = it.stats()

    assert sorted(py.keys()) == sorted(cli.keys())
    assert "nodes" in py and py["nodes"] and cli["nodes"]
    assert sorted(py["nodes"][0].keys()) == sorted(cli["nodes"][0].keys())
    for key in ("node_id", "cardinality", "static_bytes_per_element", "elements_produced",
                "cpu_ns", "buffered_bytes", "file_bytes_read"):
        assert key in py["nodes"][0]
    # Values are numbers, and the root produced what we took.
    assert isinstance(py["nodes"][0]["elements_produced"], int)
    assert py["nodes"][0]["elements_produced"] >= 1
    assert all(n["node_id"] >= 0 for n in py["nodes"])
