"""CPU memory shared with numpy, as PyTorch shares it: ``Tensor.numpy()`` and ``from_numpy``
need no copy, writes show through both ways, views keep their strides, each side keeps the
memory alive after the other is gone; bool, int64 and GPU tensors, and arrays that cannot be
shared, give copies; ``tensor(array)`` always copies."""

import gc

import numpy as np

import anygrad


def test_cpu_numpy_shares_memory_both_ways():
    t = anygrad.zeros(2, 3)
    array = t.numpy()
    array[0, 1] = 5.0
    assert t[0, 1].item() == 5.0
    t.add_(1.0)
    np.testing.assert_array_equal(array, [[1.0, 6.0, 1.0], [1.0, 1.0, 1.0]])
    assert np.shares_memory(np.asarray(t), array)


def test_views_keep_their_strides_and_offset():
    t = anygrad.arange(12, dtype=anygrad.float32).reshape(3, 4)
    view = t[1:, 1:3]
    array = view.numpy()
    np.testing.assert_array_equal(array, [[5.0, 6.0], [9.0, 10.0]])
    assert array.strides == (16, 4)
    array[1, 1] = -1.0
    assert t[2, 2].item() == -1.0
    transposed = anygrad.arange(6, dtype=anygrad.int32).reshape(2, 3).t().numpy()
    assert transposed.dtype == np.int32
    np.testing.assert_array_equal(transposed, [[0, 3], [1, 4], [2, 5]])


def test_the_array_outlives_the_tensor():
    t = anygrad.full((1000,), 2.5, dtype=anygrad.float16)
    array = t.numpy()
    del t
    gc.collect()
    assert array.dtype == np.float16
    assert float(array.sum()) == 2500.0


def test_copies_where_memory_cannot_be_shared(device):
    ints = anygrad.tensor([1, 2, 3])
    copied = ints.numpy()
    assert copied.dtype == np.int64
    copied[0] = 100
    assert ints[0].item() == 1
    flags = anygrad.tensor([True, False])
    assert flags.numpy().dtype == np.bool_
    on_device = anygrad.ones(3, device=device)
    values = on_device.numpy()
    values[0] = 7.0
    if device != "cpu":
        assert on_device[0].item() == 1.0
    forced = anygrad.ones(2).numpy(force=True)
    forced[0] = 3.0
    assert forced[0] == 3.0


def test_stride_and_storage_offset_describe_the_view():
    t = anygrad.zeros(2, 6)
    assert t.stride() == (6, 1)
    assert t.t().stride() == (1, 6)
    assert t.stride(-1) == 1
    assert t[1:].storage_offset() == 6
    assert t[1:].numpy().ctypes.data == t.numpy().ctypes.data + 6 * 4


def test_step_slices_are_views(device):
    t = anygrad.arange(12, dtype=anygrad.float32, device=device).reshape(2, 6)
    odd = t[:, 1::2]
    assert odd.stride() == (6, 2)
    odd.mul_(10)
    assert t.tolist() == [[0, 10, 2, 30, 4, 50], [6, 70, 8, 90, 10, 110]]
    t[:, ::3] = -1
    assert t[:, 0].tolist() == [-1, -1] and t[:, 3].tolist() == [-1, -1]
    x = anygrad.arange(10, dtype=anygrad.float32, device=device, requires_grad=True)
    (x[::3] * anygrad.tensor([1.0, 2.0, 3.0, 4.0], device=device)).sum().backward()
    assert x.grad.tolist() == [1, 0, 0, 2, 0, 0, 3, 0, 0, 4]
    if device == "cpu":
        shared = t[1, ::2].numpy()
        shared[0] = 99.0
        assert t[1, 0].item() == 99.0


def test_from_numpy_shares_memory_both_ways():
    array = np.zeros((2, 3), dtype=np.float32)
    t = anygrad.from_numpy(array)
    array[0, 1] = 5.0
    assert t[0, 1].item() == 5.0
    t.add_(1.0)
    np.testing.assert_array_equal(array, [[1.0, 6.0, 1.0], [1.0, 1.0, 1.0]])
    assert np.shares_memory(t.numpy(), array)
    for dtype in (np.float16, np.float64, np.int32, np.uint8, np.uint32):
        values = np.arange(4, dtype=dtype)
        shared = anygrad.from_numpy(values)
        values[0] = 3
        assert shared[0].item() == 3, dtype


def test_from_numpy_keeps_the_array_alive():
    t = anygrad.from_numpy(np.full(1000, 2.0))
    gc.collect()
    t.mul_(2.0)
    assert t.sum().item() == 4000.0
    assert t.dtype == anygrad.float64


def test_arrays_that_cannot_be_shared_are_copied():
    ints = np.arange(3, dtype=np.int64)
    t = anygrad.from_numpy(ints)
    ints[0] = 7
    assert t[0].item() == 0
    strided = np.zeros(6, dtype=np.float32)[::2]
    assert anygrad.from_numpy(strided).tolist() == [0.0, 0.0, 0.0]
    frozen = np.zeros(3, dtype=np.float32)
    frozen.flags.writeable = False
    copied = anygrad.from_numpy(frozen)
    copied.add_(1.0)
    assert frozen.tolist() == [0.0, 0.0, 0.0]
    source = np.zeros(3, dtype=np.float32)
    separate = anygrad.tensor(source)
    source[0] = 1.0
    assert separate[0].item() == 0.0
    assert anygrad.as_tensor(source)[0].item() == 1.0
