"""examples/tf_guide_pipeline.py: the TensorFlow guide "tf.data: Build TensorFlow input
pipelines" (CSV-free parts) with only `import tensorflow as tf` changed to
`import sluice as tf`. Runs it and checks the values the guide shows."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_guide_pipeline_runs_with_the_import_changed():
    src = (ROOT / "examples" / "tf_guide_pipeline.py").read_text()
    assert "import sluice as tf  # was: import tensorflow as tf" in src
    assert "import tensorflow" not in src.replace("import tensorflow as tf", "")
    env = dict(os.environ)
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "tf_guide_pipeline.py")],
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    # Basic mechanics: the elements, next(iter(...)), reduce.
    assert "[8, 3, 0, 8, 2, 1]\n8\n22\n" in text
    # Dataset structure: zip((dataset1, dataset2)) nests, a, (b, c) unpacks.
    assert "shapes: (10,), (), (100,)" in text
    # from_generator(count, args=[25]) repeated and batched by 10: the guide's output.
    assert "[20 21 22 23 24  0  1  2  3  4]" in text
    assert "(TensorSpec(shape=(), dtype=int32), TensorSpec(shape=(None,), dtype=float32))" in text
    # Batching a zip of ranges; drop_remainder gives a static batch dimension.
    assert "[[0, 1, 2, 3], [0, -1, -2, -3]]" in text
    assert "(TensorSpec(shape=(7,), dtype=int64), TensorSpec(shape=(7,), dtype=int64))" in text
    # padded_batch of tf.fill([x], x).
    assert "[[0 0 0]\n [1 0 0]\n [2 2 0]\n [3 3 3]]" in text
    # Interleaved TFRecord files, parsed.
    assert "b'shard 0 line 0' 0\nb'shard 1 line 0' 0\nb'shard 2 line 0' 0" in text
    # Windowing: flat_map(lambda x: x) of windows of 5 with shift 1, and stride 3 windows.
    assert "0 1 2 3 4 1 2 3 4 5 2 3 4 5 6" in text
    assert "[ 0  3  6  9 12 15 18 21 24 27]" in text
    # Resampling: both ways balance a 3% class to about one half.
    for name in ("sample_from_datasets", "rejection_resample"):
        line = next(l for l in text.splitlines() if l.startswith(name + ": mean label"))
        assert 0.4 < float(line.split()[-1]) < 0.6, line
    # Iterator checkpointing: the restored iterator goes on where the saved one was.
    assert "[5, 6, 7, 8, 9]\n[5, 6, 7, 8, 9]" in text
