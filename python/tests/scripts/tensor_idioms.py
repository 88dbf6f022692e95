"""Tensor idioms common in real scripts, each checked against numpy: scatter_/gather,
masked_fill, torch.where, nonzero, index_select, clamp, F.one_hot, bmm, einsum, cumsum,
tril/triu masks, repeat_interleave, in-place ops on slices, .item() and .tolist(), f-string
formatting of tensors, and a few more (topk, argsort, unique, cat/stack, view/permute,
expand, masked_select, sum with keepdim, chunk, flip, type conversions, arithmetic in place,
max with dim, sort with indices, any/all, numel, scatter_add_, index_add_, new_* ops)."""
import os

import numpy as np
import anygrad as torch                    # was: import torch
import anygrad.nn.functional as F          # was: import torch.nn.functional as F

device = torch.device(os.environ.get("DEVICE", "cuda" if torch.cuda.is_available() else "cpu"))
torch.manual_seed(0)
rng = np.random.RandomState(0)
checks = 0


def same(actual, expected, tol=1e-5):
    global checks
    checks += 1
    actual = actual.detach().cpu().numpy() if isinstance(actual, torch.Tensor) else np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=tol, atol=tol)


a_np = rng.randn(4, 5).astype(np.float32)
a = torch.tensor(a_np, device=device)

# scatter_ / gather: one-hot by scatter, picking per-row entries by gather
labels = torch.tensor([1, 0, 4, 2], device=device)
onehot = torch.zeros(4, 5, device=device).scatter_(1, labels.unsqueeze(1), 1.0)
same(onehot, np.eye(5, dtype=np.float32)[[1, 0, 4, 2]])
same(a.gather(1, labels.view(-1, 1)).squeeze(1), a_np[np.arange(4), [1, 0, 4, 2]])
src = torch.arange(1, 11, device=device).float().view(2, 5)
index = torch.tensor([[0, 1, 2, 0, 0], [2, 0, 0, 1, 2]], device=device)
scattered = torch.zeros(3, 5, device=device, dtype=src.dtype).scatter_(0, index, src)
expected = np.zeros((3, 5), np.float32)
for i in range(2):
    for j in range(5):
        expected[index[i, j].item(), j] = src[i, j].item()
same(scattered, expected)
acc = np.zeros((3, 5), np.float32)
np.add.at(acc, (index.cpu().numpy(), np.tile(np.arange(5), (2, 1))), src.cpu().numpy())
same(torch.zeros(3, 5, device=device).scatter_add_(0, index, src), acc)
filled = np.zeros((3, 5), np.float32)
for i in range(2):
    filled[i, index[i, :3].tolist()] = 7.0
same(torch.zeros(3, 5, device=device).scatter(1, index[:, :3], 7.0), filled)

# masked_fill with a causal mask from triu, and torch.where
scores = torch.tensor(rng.randn(4, 4).astype(np.float32), device=device)
mask = torch.triu(torch.ones(4, 4, device=device), diagonal=1).bool()
masked = scores.masked_fill(mask, float('-inf'))
attn = F.softmax(masked, dim=-1)
s_np = scores.cpu().numpy()
m_np = np.where(np.triu(np.ones((4, 4)), 1) > 0, -np.inf, s_np)
e = np.exp(m_np - m_np.max(-1, keepdims=True))
same(attn, e / e.sum(-1, keepdims=True))
same(torch.tril(scores), np.tril(s_np))
same(torch.where(a > 0, a, torch.zeros_like(a)), np.where(a_np > 0, a_np, 0))
same(torch.where(a > 0, a, 0.0), np.where(a_np > 0, a_np, 0))
same(torch.where(a > 0, 1.0, -1.0), np.where(a_np > 0, 1.0, -1.0))

# nonzero, index_select, masked_select, clamp
same(torch.nonzero(a > 0.5), np.argwhere(a_np > 0.5))
rows, cols = (a > 0.5).nonzero(as_tuple=True)
same(rows, np.nonzero(a_np > 0.5)[0])
same(a.index_select(0, torch.tensor([3, 0], device=device)), a_np[[3, 0]])
same(a.masked_select(a < 0), a_np[a_np < 0])
same(a.clamp(-0.5, 0.5), np.clip(a_np, -0.5, 0.5))
same(torch.clamp(a, min=0), np.maximum(a_np, 0))
same(a.clamp(max=0.1), np.minimum(a_np, 0.1))

# one_hot, bmm, einsum, cumsum, repeat_interleave
same(F.one_hot(labels, num_classes=6), np.eye(6, dtype=np.int64)[[1, 0, 4, 2]])
assert F.one_hot(labels).dtype == torch.int64 and F.one_hot(labels).shape == (4, 5)
b1_np, b2_np = rng.randn(3, 2, 4).astype(np.float32), rng.randn(3, 4, 5).astype(np.float32)
b1, b2 = torch.from_numpy(b1_np).to(device), torch.from_numpy(b2_np).to(device)
same(torch.bmm(b1, b2), b1_np @ b2_np, 1e-4)
same(torch.einsum('bij,bjk->bik', b1, b2), b1_np @ b2_np, 1e-4)
same(torch.einsum('ij->j', a), a_np.sum(0), 1e-4)
same(torch.einsum('i,j->ij', a[0], a[1]), np.outer(a_np[0], a_np[1]), 1e-5)
same(a.cumsum(dim=1), np.cumsum(a_np, 1), 1e-5)
same(torch.cumsum(a, 0), np.cumsum(a_np, 0), 1e-5)
same(labels.repeat_interleave(2), np.repeat([1, 0, 4, 2], 2))
same(torch.repeat_interleave(a, 3, dim=0), np.repeat(a_np, 3, 0))
same(torch.repeat_interleave(torch.tensor([1, 2, 3], device=device), torch.tensor([1, 0, 2], device=device)), [1, 3, 3])

# in-place ops on slices and views
b = a.clone()
b[:, 0] = 0
b[1:3] *= 2
b[0, 1:] += 1
b[b > 1.5] = 1.5
b_np = a_np.copy()
b_np[:, 0] = 0
b_np[1:3] *= 2
b_np[0, 1:] += 1
b_np[b_np > 1.5] = 1.5
same(b, b_np)
c = a.clone()
c[:, 2].add_(10)
c.narrow(0, 0, 1).mul_(0)
c_np = a_np.copy()
c_np[:, 2] += 10
c_np[0] = 0
same(c, c_np)
v = a.clone().view(20)
v[::3] = -1
v_np = a_np.copy().reshape(20)
v_np[::3] = -1
same(v, v_np)
d = torch.zeros(3, 4, device=device)
d[torch.arange(3), torch.tensor([0, 2, 3])] = torch.tensor([1.0, 2.0, 3.0], device=device)
same(d, [[1, 0, 0, 0], [0, 0, 2, 0], [0, 0, 0, 3]])
d.fill_diagonal_(5.0)
same(d, [[5, 0, 0, 0], [0, 5, 2, 0], [0, 0, 5, 3]])
e = torch.ones(2, 3, device=device)
e.add_(torch.ones(3, device=device), alpha=2).sub_(1).div_(2)
same(e, np.ones((2, 3)))
e.zero_()
same(e, np.zeros((2, 3)))

# item, tolist, f-strings, format specs, bool/int/float conversions
total = a.sum()
assert isinstance(total.item(), float)
assert abs(total.item() - float(a_np.sum())) < 1e-4
assert labels.tolist() == [1, 0, 4, 2]
assert a[0].tolist() == [float(x) for x in a_np[0]] or np.allclose(a[0].tolist(), a_np[0])
assert torch.tensor(3, device=device).item() == 3 and isinstance(torch.tensor(3).item(), int)
line = f"loss {total:.4f} acc {(labels == 1).float().mean():.2%} n={labels.numel()} max={labels.max()}"
assert line == f"loss {float(a_np.sum()):.4f} acc 25.00% n=4 max=4", line
assert f"{torch.tensor(2.5)}" == "2.5", f"{torch.tensor(2.5)}"
assert "{:.3f}".format(torch.tensor(1.23456)) == "1.235"
assert "%.2f" % torch.tensor(0.25) == "0.25"
assert int(torch.tensor(7)) == 7 and float(torch.tensor(0.5)) == 0.5 and bool(torch.tensor(True))
assert [1, 2, 3][torch.tensor(1)] == 2
assert str(torch.tensor([1, 2])) == "tensor([1, 2])"

# reductions and friends
vals, idx = a.max(dim=1)
same(vals, a_np.max(1))
same(idx, a_np.argmax(1))
top = a.topk(2, dim=1)
same(top.values, -np.sort(-a_np, 1)[:, :2])
same(a.argsort(dim=1, descending=True), np.argsort(-a_np, 1, kind="stable"))
sorted_vals, order = torch.sort(a[0])
same(sorted_vals, np.sort(a_np[0]))
same(a.sum(dim=1, keepdim=True), a_np.sum(1, keepdims=True), 1e-5)
same(a.mean(dim=(0, 1)), a_np.mean(), 1e-5)
same(a.std(dim=0), a_np.std(0, ddof=1), 1e-5)
same(a.var(dim=1, unbiased=False), a_np.var(1), 1e-5)
same(a.norm(dim=1), np.linalg.norm(a_np, axis=1), 1e-5)
same(torch.logsumexp(a, dim=1), np.log(np.exp(a_np).sum(1)), 1e-5)
uniq, counts = torch.unique(torch.tensor([3, 1, 3, 2, 1, 3], device=device), return_counts=True)
same(uniq, [1, 2, 3])
same(counts, [2, 1, 3])
assert (a > 0).any().item() and not (a > 10).all().item()
assert torch.all(a < 10) and torch.any(a > 0)

# shapes
same(torch.cat([a, a], dim=0), np.concatenate([a_np, a_np], 0))
same(torch.stack([a, a], dim=1), np.stack([a_np, a_np], 1))
same(a.view(2, 10).permute(1, 0), a_np.reshape(2, 10).T)
same(a.unsqueeze(0).expand(3, 4, 5), np.broadcast_to(a_np, (3, 4, 5)))
same(a.t().contiguous().view(-1), a_np.T.reshape(-1))
same(a.flip(1), a_np[:, ::-1])
same(a.chunk(2, dim=1)[1], a_np[:, 3:])
same(a.split([2, 3], dim=1)[0], a_np[:, :2])
same(a[None, ..., None].squeeze(), a_np)
same(a.reshape(-1, 10).transpose(0, 1).reshape(20), a_np.reshape(-1, 10).T.reshape(20))
same(a.new_zeros(2, 2), np.zeros((2, 2)))
same(a.new_full((2,), 3.0), [3.0, 3.0])
same(torch.zeros_like(a).index_add_(0, torch.tensor([0, 0, 1], device=device), a[:3]), np.concatenate([[a_np[0] + a_np[1]], [a_np[2]], np.zeros((2, 5))]))
same(a.long().float(), a_np.astype(np.int64).astype(np.float32))
same((a * 10).int() // 3, np.floor_divide(np.trunc(a_np * 10).astype(np.int64), 3))
same(torch.arange(10, device=device) % 3, np.arange(10) % 3)
same(a.masked_fill(a < 0, 0).pow(2).sqrt(), np.maximum(a_np, 0), 1e-6)
same(torch.tril(torch.ones(3, 3, device=device), diagonal=-1), np.tril(np.ones((3, 3)), -1))
same(torch.diff(a, dim=1), np.diff(a_np, axis=1), 1e-6)
same(torch.outer(a[0], a[1]), np.outer(a_np[0], a_np[1]))
same(torch.unique(torch.tensor([[1, 2], [1, 2], [0, 5]], device=device), dim=0), [[0, 5], [1, 2]])

# gradients through these idioms
w = torch.tensor(a_np, device=device, requires_grad=True)
out = (w.gather(1, labels.view(-1, 1)).sum() + w.masked_fill(w < 0, 0).sum() + torch.where(w > 0.5, w * 2, w * 0).sum())
out.backward()
grad = np.zeros_like(a_np)
grad[np.arange(4), [1, 0, 4, 2]] += 1
grad += (a_np >= 0)
grad += np.where(a_np > 0.5, 2, 0)
same(w.grad, grad)

print(f"{checks} checks passed on {device}")
