"""Reference for the split kernel: Python's bytes.split() (no argument).

IN holds strings as (uint32 little-endian length, bytes)*. OUT gets, per input string,
uint32 token count, then each token as (uint32 length, bytes).
"""
import struct
import sys

data = open(sys.argv[1], "rb").read()
out = bytearray()
pos = 0
while pos < len(data):
    (n,) = struct.unpack_from("<I", data, pos)
    pos += 4
    s = data[pos:pos + n]
    pos += n
    tokens = s.split()
    out += struct.pack("<I", len(tokens))
    for t in tokens:
        out += struct.pack("<I", len(t)) + t
open(sys.argv[2], "wb").write(bytes(out))
