"""``torch.utils.tensorboard``: ``SummaryWriter`` writing scalars to a TensorBoard event file
(``events.out.tfevents.*`` in ``log_dir``, ``runs/<date>_<host>`` by default), so
``tensorboard --logdir runs`` plots them. The file is TensorBoard's record format written here
directly (protobuf ``Event``/``Summary`` messages, each framed with its length and masked
CRC-32C checksums); nothing else is needed. ``add_scalar`` and ``add_scalars`` write;
``add_histogram``, ``add_image(s)``, ``add_graph``, ``add_text``, ``add_figure``,
``add_embedding``, ``add_hparams`` and ``add_pr_curve`` are accepted and write nothing."""

import os
import socket
import struct
import time


def _crc32c_table():
    table = []
    for byte in range(256):
        value = byte
        for _ in range(8):
            value = (value >> 1) ^ 0x82F63B78 if value & 1 else value >> 1
        table.append(value)
    return table


_CRC_TABLE = _crc32c_table()


def _masked_crc32c(data):
    """TensorBoard's masked CRC-32C (Castagnoli) of ``data``."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(value):
    out = bytearray()
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def _field(number, wire_type, payload):
    key = _varint((number << 3) | wire_type)
    if wire_type == 2:
        return key + _varint(len(payload)) + payload
    return key + payload


def _event(wall_time, step=None, file_version=None, summary=None):
    """A serialized ``Event``: wall_time (1, double), step (2, int64), file_version (3) or
    summary (5)."""
    message = _field(1, 1, struct.pack("<d", wall_time))
    if step is not None:
        message += _field(2, 0, _varint(int(step) & 0xFFFFFFFFFFFFFFFF))
    if file_version is not None:
        message += _field(3, 2, file_version.encode())
    if summary is not None:
        message += _field(5, 2, summary)
    return message


def _scalar_summary(tag, value):
    """A serialized ``Summary`` with one ``Value``: tag (1) and simple_value (2, float)."""
    value_message = _field(1, 2, tag.encode()) + _field(2, 5, struct.pack("<f", float(value)))
    return _field(1, 2, value_message)


class SummaryWriter:
    """Writes scalars for TensorBoard: ``add_scalar(tag, value, global_step)``,
    ``add_scalars(main_tag, {name: value}, global_step)`` (as ``main_tag/name`` tags),
    ``flush``, ``close``; a context manager."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120, filename_suffix=""):
        if log_dir is None:
            stamp = time.strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = str(log_dir)
        os.makedirs(self.log_dir, exist_ok=True)
        name = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}.{os.getpid()}{filename_suffix}"
        self._file = open(os.path.join(self.log_dir, name), "ab")
        self._write(_event(time.time(), file_version="brain.Event:2"))

    def get_logdir(self):
        """The directory written to."""
        return self.log_dir

    def _write(self, data):
        header = struct.pack("<Q", len(data))
        self._file.write(header + struct.pack("<I", _masked_crc32c(header)) + data + struct.pack("<I", _masked_crc32c(data)))

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False, double_precision=False):
        """Record one value (a number or a one-element tensor) of the series ``tag``."""
        value = scalar_value.item() if hasattr(scalar_value, "item") else float(scalar_value)
        self._write(_event(walltime or time.time(), global_step, summary=_scalar_summary(tag, value)))

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Record several series at once, as ``main_tag/name``."""
        for name, value in tag_scalar_dict.items():
            self.add_scalar(f"{main_tag}/{name}", value, global_step, walltime)

    def _accepted(self, *args, **kwargs):
        """Accepted; writes nothing (only scalars are written)."""

    add_histogram = add_image = add_images = add_graph = add_text = add_figure = _accepted
    add_embedding = add_hparams = add_pr_curve = add_audio = add_video = add_mesh = _accepted

    def flush(self):
        """Write what is buffered."""
        self._file.flush()

    def close(self):
        """Flush and close the file."""
        if not self._file.closed:
            self._file.flush()
            self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
