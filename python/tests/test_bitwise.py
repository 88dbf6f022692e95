"""Bit operators on integer and bool tensors (``& | ^ ~ << >>``, their in-place and reversed
forms, and the ``bitwise_*`` functions), checked against numpy's on every device."""

import numpy as np
import pytest

import anygrad


A = np.array([5, -6, 7, 0, 1 << 20, -1, 12345], dtype=np.int64)
B = np.array([3, 3, 1, 9, 7, 0, -2], dtype=np.int64)


def test_and_or_xor_not_match_numpy(device):
    a = anygrad.tensor(A, device=device)
    b = anygrad.tensor(B, device=device)
    np.testing.assert_array_equal((a & b).cpu().numpy(), A & B)
    np.testing.assert_array_equal((a | b).cpu().numpy(), A | B)
    np.testing.assert_array_equal((a ^ b).cpu().numpy(), A ^ B)
    np.testing.assert_array_equal((~a).cpu().numpy(), ~A)
    np.testing.assert_array_equal(anygrad.bitwise_xor(a, b).cpu().numpy(), A ^ B)
    np.testing.assert_array_equal(a.bitwise_not().cpu().numpy(), ~A)
    assert (a & b).dtype == anygrad.int64
    # Scalars on either side.
    np.testing.assert_array_equal((a & 6).cpu().numpy(), A & 6)
    np.testing.assert_array_equal((6 | a).cpu().numpy(), 6 | A)


def test_shifts_match_numpy(device):
    values = np.array([1, -8, 255, 3, -1], dtype=np.int64)
    amounts = np.array([0, 1, 4, 2, 3], dtype=np.int64)
    x = anygrad.tensor(values, device=device)
    s = anygrad.tensor(amounts, device=device)
    np.testing.assert_array_equal((x << s).cpu().numpy(), values << amounts)
    np.testing.assert_array_equal((x >> s).cpu().numpy(), values >> amounts)
    np.testing.assert_array_equal((1 << s).cpu().numpy(), 1 << amounts)
    np.testing.assert_array_equal(anygrad.bitwise_right_shift(x, 1).cpu().numpy(), values >> 1)
    x <<= 2
    np.testing.assert_array_equal(x.cpu().numpy(), values << 2)


def test_uint8_wraps_and_bool_stays_logical(device):
    raw = np.array([0, 1, 127, 128, 255], dtype=np.uint8)
    x = anygrad.tensor(raw, device=device)
    assert (~x).dtype == anygrad.uint8
    np.testing.assert_array_equal((~x).cpu().numpy(), ~raw)
    np.testing.assert_array_equal((x << 1).cpu().numpy(), (raw << 1).astype(np.uint8))
    p = anygrad.tensor([True, True, False, False], device=device)
    q = anygrad.tensor([True, False, True, False], device=device)
    assert (p & q).tolist() == [True, False, False, False]
    assert (p | q).tolist() == [True, True, True, False]
    assert (p ^ q).tolist() == [False, True, True, False]
    assert (~p).tolist() == [False, False, True, True]
    assert (p & True).dtype == anygrad.bool
    # A bool tensor with an int computes in the integer dtype, as in PyTorch.
    assert (p & 1).tolist() == [1, 1, 0, 0]
    mask = p.clone()
    mask &= q
    mask |= anygrad.tensor([False, False, False, True], device=device)
    assert mask.tolist() == [True, False, False, True]


def test_float_operands_raise_type_error(device):
    x = anygrad.tensor([1.0, 2.0], device=device)
    with pytest.raises(TypeError, match="bitwise_and"):
        x & x
    with pytest.raises(TypeError, match="bitwise_left_shift"):
        x << 1
    with pytest.raises(TypeError, match="bitwise_or"):
        anygrad.tensor([1, 2], device=device) | 1.5
