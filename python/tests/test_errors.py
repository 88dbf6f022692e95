"""Bad input raises the exception class PyTorch raises, with a message naming the op; nothing
crashes the interpreter."""

import pytest

import anygrad as torch
import anygrad.nn.functional as F

CASES = [
    (lambda: torch.zeros(-1), RuntimeError, "zeros: negative dimension"),
    (lambda: torch.zeros(4).view(-1, -1), ValueError, "reshape"),
    (lambda: torch.randint(5, 2, (3,)), ValueError, "randint"),
    (lambda: F.conv2d(torch.zeros(1, 3, 5, 5), torch.zeros(4, 2, 3, 3)), RuntimeError, "conv2d"),
    (lambda: F.max_pool2d(torch.zeros(1, 1, 2, 2), 5), ValueError, "max_pool2d"),
    (lambda: torch.zeros(2**40), MemoryError, "out of memory"),
    (lambda: torch.zeros(3).gather(0, torch.tensor([5])), ValueError, "gather"),
    (lambda: F.nll_loss(torch.zeros(2, 3), torch.tensor([0, 9])), ValueError, "out of range"),
    (lambda: torch.cat([torch.zeros(2, 3), torch.zeros(2, 4)]), RuntimeError, "cat"),
    (lambda: torch.zeros(2).softmax(3), RuntimeError, "softmax: dim 3"),
    (lambda: torch.zeros(4).reshape(3, 3), RuntimeError, "reshape"),
    (lambda: torch.linspace(0, 1, -1), RuntimeError, "linspace: steps must be non-negative"),
    (lambda: torch.eye(-2), RuntimeError, "eye: n must be non-negative"),
    (lambda: torch.randperm(-1), RuntimeError, "randperm: n must be non-negative"),
    (lambda: torch.tensor([2]) ** -1, RuntimeError, "negative integer powers"),
    (lambda: torch.tensor([1]) // 0, RuntimeError, "ZeroDivisionError"),
    (lambda: torch.tensor([1]) % 0, RuntimeError, "ZeroDivisionError"),
    (lambda: F.one_hot(torch.tensor([-1]), 3), RuntimeError, "non-negative"),
    (lambda: F.one_hot(torch.tensor([3]), 3), RuntimeError, "smaller than num_classes"),
    (lambda: torch.zeros(2).to("tpu"), ValueError, "invalid device string"),
    (lambda: F.dropout(torch.zeros(2), 1.5), ValueError, "dropout"),
    (lambda: torch.zeros(2, 3).permute(0, 0), RuntimeError, "permute"),
    (lambda: torch.zeros(3).item(), RuntimeError, "item"),
]


@pytest.mark.parametrize("case,kind,message", CASES, ids=[c[2] for c in CASES])
def test_bad_input_raises_the_matching_exception(case, kind, message):
    with pytest.raises(kind, match=message):
        case()


def test_mixing_devices_names_both(device):
    if device == "cpu":
        return
    with pytest.raises(RuntimeError, match="different devices"):
        torch.zeros(2) + torch.zeros(2, device=device)
    with pytest.raises(ValueError, match="gather"):
        torch.zeros(3, device=device).gather(0, torch.tensor([5], device=device)).tolist()
