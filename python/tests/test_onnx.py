"""anygrad.onnx: an ONNX model built with the onnx package, loaded, run on each device against
numpy, fine-tuned through its initializers and saved; bad files and inputs are Python
exceptions. The onnx package is in CI (.ci/run); without it the tests skip, unless
ANYGRAD_REQUIRE_DATA=1 makes that a failure."""

import os

import numpy as np
import pytest

import anygrad as torch


def onnx_or_skip():
    try:
        import onnx
    except ImportError:
        if os.environ.get("ANYGRAD_REQUIRE_DATA") == "1":
            pytest.fail("ANYGRAD_REQUIRE_DATA=1 but the onnx package is not installed")
        pytest.skip("the onnx package is not installed")
    return onnx


def write_model(path, weight, bias):
    """y = relu(x @ W^T + b) with a symbolic batch, and the int64 shape of x."""
    onnx = onnx_or_skip()
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("Gemm", ["x", "W", "b"], ["hidden"], transB=1, name="linear"),
        helper.make_node("Relu", ["hidden"], ["y"], name="activation"),
        helper.make_node("Shape", ["x"], ["shape"], name="shape_of_x"),
    ]
    graph = helper.make_graph(
        nodes, "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
        initializer=[numpy_helper.from_array(weight, "W"), numpy_helper.from_array(bias, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def test_load_run_fine_tune_and_save(device, tmp_path):
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((3, 4)).astype(np.float32)
    bias = rng.standard_normal(3).astype(np.float32)
    write_model(tmp_path / "tiny.onnx", weight, bias)
    model = torch.onnx.load(tmp_path / "tiny.onnx", device=device)
    assert model.input_names == ["x"] and model.output_names == ["y", "shape"]
    assert model.inputs() == [("x", "float", ["batch", 4])]
    assert model.unsupported_nodes() == []

    for batch in (2, 5):  # the symbolic batch takes any size
        x = rng.standard_normal((batch, 4)).astype(np.float32)
        y, shape = model(torch.from_numpy(x).to(device))
        np.testing.assert_allclose(y.cpu().numpy(), np.maximum(x @ weight.T + bias, 0), rtol=1e-5, atol=1e-5)
        assert shape.dtype == torch.int64 and shape.tolist() == [batch, 4]
    outputs = model.run({"x": torch.ones(1, 4, device=device)})
    assert set(outputs) == {"y", "shape"}

    # Fine-tuning: the initializers are the model's own tensors.
    names = [name for name, _ in model.named_parameters()]
    assert names == ["W", "b"]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.from_numpy(rng.standard_normal((8, 4)).astype(np.float32)).to(device)
    target = torch.zeros(8, 3, device=device)
    losses = []
    for _ in range(3):
        optimizer.zero_grad()
        loss = ((model(x)[0] - target) ** 2).mean()
        loss.backward()
        assert all(p.grad is not None for p in model.parameters())
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]

    model.save_safetensors(tmp_path / "tuned.safetensors")
    saved = torch.safetensors.load_file(str(tmp_path / "tuned.safetensors"))
    assert set(saved) == {"W", "b"}
    np.testing.assert_allclose(saved["W"].numpy(), dict(model.named_parameters())["W"].detach().cpu().numpy())
    assert not np.allclose(saved["W"].numpy(), weight)


def test_bad_files_and_inputs_are_python_errors(tmp_path):
    with pytest.raises(OSError, match="missing.onnx"):
        torch.onnx.load(tmp_path / "missing.onnx")
    (tmp_path / "garbage.onnx").write_bytes(b"\x0a\xff\xff\xff\xff\x0f not protobuf")
    with pytest.raises(ValueError, match="onnx.load"):
        torch.onnx.load(tmp_path / "garbage.onnx")

    write_model(tmp_path / "tiny.onnx", np.ones((3, 4), np.float32), np.zeros(3, np.float32))
    model = torch.onnx.load(tmp_path / "tiny.onnx")
    with pytest.raises(ValueError, match="onnx.run"):
        model.run({"not_an_input": torch.ones(2, 4)})
    with pytest.raises(ValueError, match="onnx.run"):
        model(torch.ones(2, 5))  # the declared width is 4
    with pytest.raises(TypeError, match="takes 1 inputs"):
        model(torch.ones(2, 4), torch.ones(2, 4))
