"""``utils.data``: Dataset subclassed in Python, TensorDataset, DataLoader (batching,
shuffling, drop_last, collate of tensors, numbers, tuples and dicts), random_split,
WeightedRandomSampler."""

import numpy as np
import pytest

import anygrad as torch
from anygrad.utils.data import DataLoader, Dataset, TensorDataset, random_split


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        return {"x": torch.tensor([float(index)]), "y": index * index, "name": f"s{index}"}


def test_dataloader_batches_a_python_dataset():
    loader = DataLoader(Squares(10), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    first = batches[0]
    assert tuple(first["x"].shape) == (4, 1) and first["y"].tolist() == [0, 1, 4, 9]
    assert first["y"].dtype == torch.int64 and first["name"] == ["s0", "s1", "s2", "s3"]
    assert len(list(DataLoader(Squares(10), batch_size=4, drop_last=True))) == 2


def test_shuffle_visits_every_sample_once():
    loader = DataLoader(Squares(50), batch_size=8, shuffle=True)
    seen = sorted(int(v) for batch in loader for v in batch["y"].tolist())
    assert seen == sorted(i * i for i in range(50))
    orders = [[b["y"].tolist() for b in loader] for _ in range(2)]
    assert orders[0] != orders[1]


def test_tensor_dataset_and_tuple_collate(device):
    x = torch.arange(20, device=device).reshape(10, 2).float()
    y = torch.arange(10, device=device)
    ds = TensorDataset(x, y)
    assert len(ds) == 10 and ds[3][1].item() == 3
    batches = list(DataLoader(ds, batch_size=4, shuffle=True, num_workers=2, pin_memory=True))
    assert [tuple(b[0].shape) for b in batches] == [(4, 2), (4, 2), (2, 2)]
    assert sorted(v for b in batches for v in b[1].tolist()) == list(range(10))
    for inputs, labels in batches:
        assert (inputs[:, 0] == labels.float() * 2).all().item()
    with pytest.raises(ValueError, match="Size mismatch"):
        TensorDataset(x, torch.arange(3))


def test_collate_of_tuples_of_numbers_and_numpy():
    class Pairs(Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return np.full((2,), i, dtype=np.float32), float(i) / 2

    images, values = next(iter(DataLoader(Pairs(), batch_size=3)))
    assert tuple(images.shape) == (3, 2) and values.dtype == torch.float64
    assert values.tolist() == [0.0, 0.5, 1.0]
    custom = DataLoader(Pairs(), batch_size=2, collate_fn=lambda batch: len(batch))
    assert list(custom) == [2, 1]


def test_random_split_partitions():
    parts = random_split(Squares(10), [7, 3])
    assert [len(p) for p in parts] == [7, 3]
    values = sorted(p[i]["y"] for p in parts for i in range(len(p)))
    assert values == [i * i for i in range(10)]
    fractions = random_split(Squares(10), [0.5, 0.5])
    assert [len(p) for p in fractions] == [5, 5]
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(Squares(10), [4, 4])


def test_shuffle_follows_manual_seed():
    orders = []
    for _ in range(2):
        torch.manual_seed(3)
        orders.append([b["y"].tolist() for b in DataLoader(Squares(20), batch_size=5, shuffle=True)])
    assert orders[0] == orders[1]


def test_worker_threads_give_the_same_batches_in_order():
    class Slow(Dataset):
        def __len__(self):
            return 23

        def __getitem__(self, index):
            import time

            time.sleep(0.001 * (index % 3))
            return torch.tensor([float(index)]), index

    single = [(x.tolist(), y.tolist()) for x, y in DataLoader(Slow(), batch_size=4)]
    threaded = [(x.tolist(), y.tolist()) for x, y in DataLoader(Slow(), batch_size=4, num_workers=3, prefetch_factor=2)]
    assert threaded == single and len(single) == 6
    with pytest.raises(ValueError, match="num_workers"):
        DataLoader(Slow(), num_workers=-1)


def test_weighted_random_sampler():
    from anygrad.utils.data import WeightedRandomSampler

    weights = [0.1, 0.0, 0.6, 0.3]
    sampler = WeightedRandomSampler(weights, num_samples=6000)
    assert len(sampler) == 6000
    torch.manual_seed(5)
    drawn = list(sampler)
    assert len(drawn) == 6000 and all(isinstance(i, int) for i in drawn)
    frequencies = np.bincount(drawn, minlength=4) / 6000
    assert frequencies[1] == 0
    assert np.abs(frequencies - np.array(weights)).max() < 0.03
    torch.manual_seed(5)
    assert list(sampler) == drawn
    generator = torch.Generator().manual_seed(9)
    first = list(WeightedRandomSampler(torch.tensor(weights), 20, generator=generator))
    generator.manual_seed(9)
    assert list(WeightedRandomSampler(torch.tensor(weights), 20, generator=generator)) == first
    without = list(WeightedRandomSampler([1.0, 2.0, 3.0, 4.0, 0.5], 5, replacement=False))
    assert sorted(without) == [0, 1, 2, 3, 4]
    dataset = TensorDataset(torch.arange(4.0))
    loader = DataLoader(dataset, batch_size=5, sampler=WeightedRandomSampler([0.0, 1.0, 0.0, 0.0], 10))
    assert [batch[0].tolist() for batch in loader] == [[1.0] * 5, [1.0] * 5]
    with pytest.raises(ValueError, match="num_samples"):
        WeightedRandomSampler(weights, 0)
    with pytest.raises(ValueError, match="replacement"):
        WeightedRandomSampler(weights, 3, replacement=1)
