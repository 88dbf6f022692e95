"""Reading files named by the user: regular files only, with a size bound (FIFOs, devices and
directories are refused before anything is read), like the library's ``files`` module."""

import os
import stat

#: The largest file read whole (8 GiB).
MAX_BYTES = 8 << 30


def read_regular_bytes(path, limit=MAX_BYTES):
    """The bytes of the regular file ``path``; ``OSError`` naming the path otherwise."""
    path = os.fspath(path)
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise OSError(f"{path}: not a regular file")
    if info.st_size > limit:
        raise OSError(f"{path}: {info.st_size} bytes exceed the limit of {limit} bytes")
    with open(path, "rb") as handle:
        return handle.read(limit + 1)
