#!/usr/bin/env python3
"""A GGUF model of a real model's exact shapes, types and tokenizer with random weights, for
speed measurements where the real file cannot travel (a GPU machine without network access).

    random_gguf.py skeleton REAL.gguf SKELETON.gguf   # header, metadata, tensor table only
    random_gguf.py fill SKELETON.gguf OUT.gguf        # the same with random tensor data

`skeleton` keeps everything before the data section (a few MB for SmolLM2-135M, against
98 MB). `fill` writes every tensor's bytes: F32/F16 vectors near 1 (norms), block types with
random codes and small f16 scales (so activations stay finite), other F32/F16 tensors small
random values. Only numpy is needed.
"""

import struct
import sys

import numpy as np

# GGML type id -> (values per block, bytes per block, offsets of f16 scale fields).
TYPES = {
    0: (1, 4, ()),            # F32
    1: (1, 2, ()),            # F16
    2: (32, 18, (0,)),        # Q4_0
    3: (32, 20, (0, 2)),      # Q4_1
    6: (32, 22, (0,)),        # Q5_0
    7: (32, 24, (0, 2)),      # Q5_1
    8: (32, 34, (0,)),        # Q8_0
    12: (256, 144, (0, 2)),   # Q4_K
    13: (256, 176, (0, 2)),   # Q5_K
    14: (256, 210, (208,)),   # Q6_K
}
SCALAR_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


class Reader:
    def __init__(self, data):
        self.data = data
        self.at = 0

    def take(self, fmt):
        values = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return values if len(values) > 1 else values[0]

    def string(self):
        length = self.take("Q")
        text = self.data[self.at:self.at + length].decode("utf-8", errors="replace")
        self.at += length
        return text

    def value(self, kind):
        if kind == 8:
            return self.string()
        if kind == 9:
            item, count = self.take("I"), self.take("Q")
            return [self.value(item) for _ in range(count)]
        fmt = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q",
               11: "q", 12: "d"}[kind]
        return self.take(fmt)


def parse(data):
    """(metadata dict, [(name, dims, type, offset)], data section start)."""
    reader = Reader(data)
    magic, version, tensor_count, kv_count = reader.take("4sIQQ")
    if magic != b"GGUF" or version not in (2, 3):
        sys.exit("not a GGUF v2/v3 file")
    metadata = {}
    for _ in range(kv_count):
        key = reader.string()
        metadata[key] = reader.value(reader.take("I"))
    tensors = []
    for _ in range(tensor_count):
        name = reader.string()
        rank = reader.take("I")
        dims = [reader.take("Q") for _ in range(rank)]
        kind, offset = reader.take("I"), reader.take("Q")
        tensors.append((name, dims, kind, offset))
    alignment = int(metadata.get("general.alignment", 32))
    start = (reader.at + alignment - 1) // alignment * alignment
    return metadata, tensors, start


def tensor_bytes(dims, kind):
    values, block_bytes, _ = TYPES[kind]
    count = int(np.prod(dims))
    return count // values * block_bytes


def random_data(dims, kind, rng):
    values, block_bytes, scales = TYPES[kind]
    count = int(np.prod(dims))
    if values == 1:
        dtype = np.float32 if kind == 0 else np.float16
        if len(dims) == 1:
            return (1.0 + 0.1 * rng.standard_normal(count)).astype(dtype).tobytes()
        return (0.02 * rng.standard_normal(count)).astype(dtype).tobytes()
    blocks = count // values
    raw = rng.integers(0, 256, size=(blocks, block_bytes), dtype=np.uint8)
    size = 0.001 if values == 256 else 0.02
    for field in scales:
        half = (size * rng.uniform(-1, 1, blocks)).astype(np.float16)
        raw[:, field:field + 2] = half.view(np.uint8).reshape(blocks, 2)
    return raw.tobytes()


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("skeleton", "fill"):
        sys.exit(__doc__)
    mode, source, target = sys.argv[1:]
    data = open(source, "rb").read()
    metadata, tensors, start = parse(data)
    if mode == "skeleton":
        open(target, "wb").write(data[:start])
        return
    rng = np.random.default_rng(0)
    with open(target, "wb") as out:
        out.write(data[:start])
        for name, dims, kind, offset in sorted(tensors, key=lambda t: t[3]):
            if kind not in TYPES:
                sys.exit(f"{name}: GGML type {kind} is not handled")
            position = start + offset
            out.write(b"\0" * (position - out.tell()))
            out.write(random_data(dims, kind, rng))
    print(f"{target}: {len(tensors)} tensors of random data after {start} bytes of metadata")


if __name__ == "__main__":
    main()
