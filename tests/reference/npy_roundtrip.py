"""Self-test of the .npy bridge: reads IN.npy, writes OUT.npy = IN * 2 (same dtype)."""
import sys
import numpy as np

a = np.load(sys.argv[1])
np.save(sys.argv[2], (a * 2).astype(a.dtype))
