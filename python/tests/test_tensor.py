"""Tensors: creation, dtypes, readback, repr and conversions, compared with numpy."""

import math

import numpy as np
import pytest

import anygrad as torch
from conftest import assert_close


def test_tensor_from_nested_lists_infers_dtype_and_shape(device):
    floats = torch.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    assert floats.dtype == torch.float32 and floats.shape == (2, 2)
    ints = torch.tensor([1, 2, 3], device=device)
    assert ints.dtype == torch.int64 and ints.dtype == torch.long
    bools = torch.tensor([True, False], device=device)
    assert bools.dtype == torch.bool
    assert torch.tensor(3.5).item() == 3.5 and torch.tensor(3.5).dim() == 0
    assert ints.tolist() == [1, 2, 3] and isinstance(ints.tolist()[0], int)
    assert bools.tolist() == [True, False]


def test_uneven_lists_and_strings_are_value_and_type_errors():
    with pytest.raises(ValueError, match="tensor"):
        torch.tensor([[1, 2], [3]])
    with pytest.raises(TypeError):
        torch.tensor("text")
    with pytest.raises(ValueError, match="32-bit"):
        torch.tensor([2**40])


def test_creation_functions_match_numpy(device):
    assert_close(torch.zeros(2, 3, device=device), np.zeros((2, 3)))
    assert_close(torch.ones((2, 3), device=device), np.ones((2, 3)))
    assert_close(torch.full((2, 2), 7.0, device=device), np.full((2, 2), 7.0))
    assert torch.full((2,), 3).dtype == torch.int64
    assert_close(torch.arange(5, device=device), np.arange(5))
    assert torch.arange(5).dtype == torch.int64 and torch.arange(0.0, 1.0, 0.25).dtype == torch.float32
    assert_close(torch.arange(1, 10, 3, device=device), np.arange(1, 10, 3))
    assert_close(torch.linspace(0, 1, 5, device=device), np.linspace(0, 1, 5))
    assert_close(torch.eye(3, device=device), np.eye(3))
    assert_close(torch.eye(2, 3), np.eye(2, 3))
    x = torch.randn(4, 5, device=device)
    assert_close(torch.zeros_like(x), np.zeros((4, 5)))
    assert_close(torch.ones_like(x), np.ones((4, 5)))
    assert torch.zeros_like(x).device == x.device
    assert torch.rand_like(x).shape == (4, 5)


def test_random_functions_have_their_ranges(device):
    torch.manual_seed(0)
    u = torch.rand(1000, device=device).numpy()
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.05
    n = torch.randn(4000, device=device).numpy()
    assert abs(n.mean()) < 0.1 and abs(n.std() - 1) < 0.1
    r = torch.randint(3, 7, (500,), device=device)
    assert r.dtype == torch.int64 and r.min().item() >= 3 and r.max().item() < 7
    assert torch.randint(5, (3, 2)).shape == (3, 2)
    p = torch.randperm(10, device=device)
    assert sorted(p.tolist()) == list(range(10))
    torch.manual_seed(7)
    a = torch.randn(5).tolist()
    torch.manual_seed(7)
    assert torch.randn(5).tolist() == a


def test_numpy_round_trip_and_array_protocol(device):
    for dtype in (np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_, np.float16):
        if dtype is np.float64 and device != "cpu":
            continue  # float64 lives on the CPU only
        array = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
        t = torch.from_numpy(array)
        back = t.to(device).cpu().numpy()
        assert back.dtype == array.dtype, (dtype, back.dtype)
        np.testing.assert_array_equal(back, array)
    t = torch.tensor(np.array([[1.5, 2.5]], dtype=np.float32), device=device)
    np.testing.assert_array_equal(np.asarray(t), np.array([[1.5, 2.5]], dtype=np.float32))
    with pytest.raises(RuntimeError, match="requires grad"):
        torch.ones(2, requires_grad=True).numpy()


def test_repr_looks_like_pytorch():
    assert repr(torch.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(torch.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(torch.tensor(2.5)) == "tensor(2.5000)"
    assert repr(torch.tensor([True])) == "tensor([True])"
    assert repr(torch.tensor([1.0], dtype=torch.float64)) == "tensor([1.], dtype=anygrad.float64)"
    assert repr(torch.ones(1, requires_grad=True)) == "tensor([1.], requires_grad=True)"
    assert repr(torch.tensor([[1, -20], [300, 4]])) == "tensor([[  1, -20],\n        [300,   4]])"
    assert repr(torch.tensor([0.5, -1.25])) == "tensor([ 0.5000, -1.2500])"


def test_repr_names_the_gpu():
    if not torch.gpu.is_available():
        pytest.skip("no GPU")
    assert repr(torch.tensor([1.0, 2.0], device="gpu:0")) == "tensor([1., 2.], device='gpu:0')"


def test_size_dim_numel_len_iter_bool(device):
    x = torch.zeros(2, 3, 4, device=device)
    assert x.size() == (2, 3, 4) and x.size(1) == 3 and x.size(-1) == 4
    assert isinstance(x.shape, torch.Size) and x.shape.numel() == 24 and x.shape == torch.Size([2, 3, 4])
    assert repr(x.shape) == "anygrad.Size([2, 3, 4])"
    assert x.dim() == 3 and x.ndim == 3 and x.numel() == 24 and len(x) == 2
    rows = list(torch.tensor([[1, 2], [3, 4]], device=device))
    assert [r.tolist() for r in rows] == [[1, 2], [3, 4]]
    assert bool(torch.tensor([1], device=device)) and not bool(torch.tensor(0.0, device=device))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(torch.ones(2))
    with pytest.raises(TypeError):
        len(torch.tensor(1.0))
    assert float(torch.tensor([2.5])) == 2.5 and int(torch.tensor(3)) == 3
    assert [10, 20, 30][torch.tensor(1)] == 20


def test_dtypes_compare_and_convert(device):
    assert torch.float32 == torch.float and torch.int64 == torch.long and torch.float64 == torch.double
    assert torch.float32 != torch.float16 and torch.int32 != torch.int64
    assert str(torch.float32) == "anygrad.float32" and torch.float32.is_floating_point
    x = torch.tensor([1.7, -2.2], device=device)
    assert x.long().tolist() == [1, -2] and x.long().dtype == torch.int64
    assert x.int().dtype == torch.int32
    assert x.to(torch.float16).dtype == torch.float16
    assert x.to(torch.float64).dtype == torch.float64 if device == "cpu" else True
    assert x.bool().tolist() == [True, True]
    assert torch.tensor([1, 2]).float().dtype == torch.float32
    assert x.to(dtype=torch.int32, device="cpu").device == torch.device("cpu")
    assert {torch.float32: "f"}[torch.float] == "f"


def test_devices_parse_like_pytorch():
    assert torch.device("cpu").type == "cpu"
    assert torch.device("cuda:1").index == 1 and torch.device("cuda").type == "cuda"
    assert torch.device("gpu:0") == torch.device("cuda:0")
    assert str(torch.device("cuda:0")) == "cuda:0"
    assert repr(torch.device("gpu", 1)) == "device(type='gpu', index=1)"
    with pytest.raises(ValueError, match="device"):
        torch.device("tpu")
    with pytest.raises(ValueError, match="device"):
        torch.device("cuda:x")


def test_gpu_module_answers_without_a_gpu_error():
    count = torch.gpu.device_count()
    assert torch.cuda.device_count() == count
    assert torch.gpu.is_available() == (count > 0)
    torch.gpu.empty_cache()
    if count:
        assert isinstance(torch.gpu.get_device_name(0), str)
        before = torch.gpu.memory_allocated()
        keep = torch.ones(1024, device="cuda")
        assert torch.cuda.memory_allocated() >= before
        properties = torch.cuda.get_device_properties(0)
        assert properties.name == torch.gpu.get_device_name(0)
        assert properties.max_storage_binding_size > 0 and properties.total_memory is None
        # The peak restarts from what is allocated now, then follows a larger tensor.
        big = torch.ones(1 << 20, device="cuda")
        del big
        peak = torch.cuda.max_memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        assert torch.cuda.max_memory_allocated() < peak
        assert torch.cuda.max_memory_allocated() >= torch.cuda.memory_allocated()
        del keep
        with pytest.raises(ValueError, match="no GPU"):
            torch.cuda.get_device_properties(count)
    else:
        with pytest.raises(ValueError, match="no GPU"):
            torch.gpu.get_device_name(0)


def test_to_moves_between_devices(device):
    x = torch.arange(6).reshape(2, 3).float()
    moved = x.to(device)
    assert moved.device == torch.device(device)
    assert moved.cpu().tolist() == x.tolist()
    assert moved.to(x).device == torch.device("cpu")
    assert x.to(device, torch.float16).dtype == torch.float16


def test_clone_detach_contiguous_share_or_copy(device):
    x = torch.ones(3, device=device)
    d = x.detach()
    assert d._same_storage(x)
    c = x.clone()
    assert not c._same_storage(x)
    c += 1
    assert x.tolist() == [1.0, 1.0, 1.0] and c.tolist() == [2.0, 2.0, 2.0]


def test_pickle_keeps_values_dtype_and_device(tmp_path, device):
    import pickle

    x = torch.tensor([[1, 2], [3, 4]], device=device)
    y = pickle.loads(pickle.dumps(x))
    assert y.tolist() == x.tolist() and y.dtype == torch.int64 and y.device == x.device
    path = tmp_path / "state.pt"
    torch.save({"x": x, "n": 3}, path)
    loaded = torch.load(path, map_location="cpu")
    assert loaded["n"] == 3 and loaded["x"].tolist() == [[1, 2], [3, 4]]


def test_math_functions_match_numpy(device):
    values = np.array([0.5, 1.0, 2.0, 3.5], dtype=np.float32)
    x = torch.tensor(values, device=device)
    for name in ("exp", "log", "sqrt", "sin", "cos", "tanh", "abs"):
        assert_close(getattr(x, name)(), getattr(np, name)(values), rtol=1e-4, atol=1e-5)
    assert_close(x.sigmoid(), 1 / (1 + np.exp(-values)), rtol=1e-5)
    assert_close(torch.exp(x), np.exp(values), rtol=1e-5)
    assert_close(x.clamp(1.0, 3.0), np.clip(values, 1.0, 3.0))
    assert_close(x.clamp(min=1.0), np.maximum(values, 1.0))
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert_close(torch.tensor(m, device=device) @ torch.tensor(m.T, device=device), m @ m.T)
    assert_close(torch.tensor(m, device=device).softmax(1), np.exp(m) / np.exp(m).sum(1, keepdims=True), rtol=1e-5)
    assert_close(torch.tensor([-1.5, 1.5, 2.5], device=device).floor(), [-2, 1, 2])
    assert_close(torch.tensor([-1.5, 0.5, 2.5, 1.2], device=device).round(), [-2, 0, 2, 1])
    big = torch.tensor([3e9 + 0.5, -3e9 - 0.5, -2.5, 2.7], dtype=torch.float64 if device == "cpu" else torch.float32, device=device)
    for name in ("floor", "ceil", "trunc", "round"):
        expected = {"round": np.round}.get(name, getattr(np, name))(big.cpu().numpy())
        assert_close(getattr(torch, name)(big), expected)
    assert_close(torch.tensor([1.2345, -2.5551], device=device).round(decimals=2), [1.23, -2.56], atol=1e-6)
    assert torch.tensor([3, -4], device=device).floor().dtype == torch.int64
    assert math.isclose(torch.tensor([3.0, 4.0], device=device).norm().item(), 5.0, rel_tol=1e-6)


def test_zero_dim_arrays_and_tensors_keep_their_shape(device):
    assert tuple(torch.from_numpy(np.array(3.5, dtype=np.float32)).shape) == ()
    assert tuple(torch.tensor(np.int64(4)).shape) == ()
    import pickle

    scalar = torch.tensor(7, device=device)
    assert tuple(pickle.loads(pickle.dumps(scalar)).shape) == ()


def test_float64_data_converts_before_moving_to_a_gpu(device):
    array = np.array([[1.5, 2.5]], dtype=np.float64)
    t = torch.tensor(array, dtype=torch.float32, device=device)
    assert t.dtype == torch.float32 and t.device == torch.device(device) and t.tolist() == [[1.5, 2.5]]
    x64 = torch.tensor([1.0, 2.0], dtype=torch.float64)
    assert x64.to(device, torch.float32).tolist() == [1.0, 2.0]
    assert x64.to(device).tolist() == [1.0, 2.0] if device == "cpu" else True


def test_dlpack_passes_tensors_both_ways(device):
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = torch.tensor(values)
    assert_close(np.from_dlpack(x), values)
    for array in (values[:, ::2], np.array([True, False]), values.astype(np.float16), np.array([[1, 2], [3, 4]], dtype=np.uint8)):
        back = torch.from_dlpack(array)
        assert back.dtype.name == array.dtype.name
        np.testing.assert_array_equal(back.numpy(), array)
    exact = torch.from_dlpack(np.array([5, -7], dtype=np.int64))
    assert exact.dtype == torch.int64 and exact.tolist() == [5, -7]
    assert np.from_dlpack(exact).dtype == np.int64
    with pytest.raises(ValueError, match="does not fit"):
        torch.from_dlpack(np.array([2**40], dtype=np.int64))
    assert torch.from_dlpack(x) is x
    if device != "cpu":
        with pytest.raises(BufferError, match="CPU"):
            np.from_dlpack(x.to(device))
    with pytest.raises(BufferError, match="from_dlpack"):
        torch.from_dlpack(object())


def test_default_dtype_chooses_the_float_of_creation_functions():
    assert torch.get_default_dtype() == torch.float32
    torch.set_default_dtype(torch.float64)
    try:
        assert torch.get_default_dtype() == torch.float64
        assert torch.zeros(2).dtype == torch.float64
        assert torch.ones(2, 3).dtype == torch.float64
        assert torch.rand(2).dtype == torch.float64 and torch.randn(2).dtype == torch.float64
        assert torch.tensor([1.5, 2.0]).dtype == torch.float64
        assert torch.full((2,), 0.5).dtype == torch.float64
        assert torch.arange(0.0, 2.0, 0.5).dtype == torch.float64
        assert torch.arange(3).dtype == torch.int64  # integers stay integers
        assert torch.linspace(0, 1, 5).dtype == torch.float64 and torch.eye(2).dtype == torch.float64
        assert torch.nn.Linear(2, 3).weight.dtype == torch.float64
        assert torch.zeros(2, dtype=torch.float32).dtype == torch.float32
        with pytest.raises(TypeError, match="set_default_dtype.*floating point"):
            torch.set_default_dtype(torch.int32)
    finally:
        torch.set_default_dtype(torch.float32)
    assert torch.zeros(2).dtype == torch.float32


def test_accelerator_is_the_gpu_of_any_vendor():
    assert torch.accelerator.is_available() == torch.gpu.is_available()
    assert torch.accelerator.device_count() == torch.gpu.device_count()
    device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
    moved = torch.ones(3).to(device)
    assert moved.device.type == device and moved.tolist() == [1.0, 1.0, 1.0]
    if torch.accelerator.is_available():
        assert torch.accelerator.current_accelerator(check_available=True) == torch.device("gpu")
        assert torch.accelerator.current_device_index() == 0
        torch.accelerator.synchronize()
    else:
        assert torch.accelerator.current_accelerator(check_available=True) is None
