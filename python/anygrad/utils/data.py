"""``anygrad.utils.data`` (``torch.utils.data``): ``Dataset`` subclassed in Python,
``TensorDataset``, ``Subset``, ``ConcatDataset``, ``random_split``, the samplers
(``SequentialSampler``, ``RandomSampler``, ``WeightedRandomSampler``, ``SubsetRandomSampler``,
``BatchSampler``) and ``DataLoader``
(``batch_size``, ``shuffle``, ``drop_last``, ``collate_fn``, ``sampler``; ``num_workers``
makes batches on that many threads, in order; ``pin_memory`` is accepted) and
``get_worker_info``. ``anygrad.utils.data.dataset``, ``.dataloader`` and ``.sampler`` name this
module, so PyTorch's imports from those submodules work.

The default collate stacks tensors, turns numbers into tensors (ints to int64, floats to
float64, as PyTorch does) and recurses into tuples, lists and dicts."""

import math


class Dataset:
    """A map-style dataset: define ``__getitem__`` and ``__len__``."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset read by iteration: define ``__iter__``."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class TensorDataset(Dataset):
    """Rows of tensors that share their first dim."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        size = tensors[0].shape[0]
        for tensor in tensors:
            if tensor.shape[0] != size:
                raise ValueError(f"Size mismatch between tensors: {tensor.shape[0]} and {size} rows")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = list(indices)

    def __getitem__(self, index):
        if isinstance(index, list):
            return [self.dataset[self.indices[i]] for i in index]
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """Datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        self.cumulative_sizes = []
        total = 0
        for dataset in self.datasets:
            total += len(dataset)
            self.cumulative_sizes.append(total)

    def __len__(self):
        return self.cumulative_sizes[-1] if self.cumulative_sizes else 0

    def __getitem__(self, index):
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"index {index} is out of range for a dataset of {len(self)} samples")
        start = 0
        for dataset, end in zip(self.datasets, self.cumulative_sizes):
            if index < end:
                return dataset[index - start]
            start = end
        raise IndexError(index)


def _permutation(count, generator):
    """A random order of ``range(count)`` from ``generator`` (anygrad's global stream when
    None), as PyTorch's samplers draw it: so ``manual_seed`` or a seeded generator makes it
    reproducible."""
    import anygrad

    return anygrad.randperm(count, generator=generator).tolist()


def random_split(dataset, lengths, generator=None):
    """Split into non-overlapping subsets of ``lengths`` (counts, or fractions that add up
    to 1)."""
    total = len(dataset)
    if all(0 <= length <= 1 for length in lengths) and abs(sum(lengths) - 1) < 1e-6 and sum(lengths) != total:
        counts = [int(math.floor(total * fraction)) for fraction in lengths]
        for i in range(total - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != total:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = _permutation(total, generator)
    subsets, offset = [], 0
    for length in lengths:
        subsets.append(Subset(dataset, order[offset:offset + length]))
        offset += length
    return subsets


class Sampler:
    """Yields dataset indices."""

    def __init__(self, data_source=None):
        self.data_source = data_source


class SequentialSampler(Sampler):
    """0, 1, 2, ..."""

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A new random order each epoch."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        super().__init__(data_source)
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator

    @property
    def num_samples(self):
        """How many indices an epoch yields."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        if self.replacement:
            import anygrad

            drawn = anygrad.randint(0, n, (self.num_samples,), generator=self.generator)
            return iter(drawn.tolist())
        return iter(_permutation(n, self.generator)[: self.num_samples])

    def __len__(self):
        return self.num_samples


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights`` (with
    ``replacement`` by default; without it each index at most once), from ``generator`` or
    anygrad's global stream, so ``manual_seed`` repeats them."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        import anygrad

        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights = anygrad.as_tensor(weights).detach().cpu()
        if weights.dim() != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(weights.shape)}")
        super().__init__(None)
        self.weights = weights.to(anygrad.float64)
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        import anygrad

        drawn = anygrad.multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator)
        return iter(drawn.tolist())

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices, generator=None):
        super().__init__(None)
        self.indices = list(indices)
        self.generator = generator

    def __iter__(self):
        return iter([self.indices[i] for i in _permutation(len(self.indices), self.generator)])

    def __len__(self):
        return len(self.indices)


class BatchSampler(Sampler):
    """Groups a sampler's indices into batches."""

    def __init__(self, sampler, batch_size, drop_last):
        super().__init__(None)
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


def default_collate(batch):
    """Stack a list of samples into a batch: tensors stacked, numbers made tensors,
    tuples/lists/dicts collated field by field."""
    import anygrad

    first = batch[0]
    if isinstance(first, anygrad.Tensor):
        return anygrad.stack(batch, 0)
    if type(first).__module__ == "numpy" and hasattr(first, "shape"):
        return anygrad.stack([anygrad.from_numpy(item) for item in batch], 0)
    if isinstance(first, bool):
        return anygrad.tensor(batch, dtype=anygrad.bool)
    if isinstance(first, int):
        return anygrad.tensor(batch, dtype=anygrad.int64)
    if isinstance(first, float):
        return anygrad.tensor(batch, dtype=anygrad.float64)
    if isinstance(first, (str, bytes)):
        return list(batch)
    if isinstance(first, dict):
        return {key: default_collate([sample[key] for sample in batch]) for key in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(default_collate(list(field)) for field in zip(*batch)))
    if isinstance(first, (tuple, list)):
        sizes = {len(sample) for sample in batch}
        if len(sizes) != 1:
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(field)) for field in zip(*batch)]
    raise TypeError(f"default_collate: batch must contain tensors, numbers, dicts or lists; found {type(first).__name__}")


class DataLoader:
    """Batches of a dataset: ``for inputs, targets in DataLoader(ds, batch_size=64,
    shuffle=True)``. A ``TensorDataset`` is batched by slicing whole tensors at once."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None, multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False, pin_memory_device=""):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative")
        if batch_size is not None and batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.generator = generator
        self.collate_fn = collate_fn if collate_fn is not None else default_collate
        self._default_collate = collate_fn is None
        self._iterable = isinstance(dataset, IterableDataset)
        if batch_sampler is not None:
            self.batch_sampler = batch_sampler
            self.sampler = None
        else:
            if sampler is None and not self._iterable:
                sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
            self.sampler = sampler
            self.batch_sampler = BatchSampler(sampler, batch_size, drop_last) if batch_size is not None and sampler is not None else None

    def __len__(self):
        if self._iterable:
            samples = len(self.dataset)
            if self.batch_size is None:
                return samples
            return samples // self.batch_size if self.drop_last else -(-samples // self.batch_size)
        if self.batch_sampler is None:
            return len(self.sampler)
        return len(self.batch_sampler)

    def _fast_batches(self):
        """Whole-tensor slicing for a TensorDataset with the default collate."""
        import anygrad

        tensors = self.dataset.tensors
        for indices in self.batch_sampler:
            if indices == list(range(indices[0], indices[0] + len(indices))):
                yield [tensor[indices[0]:indices[0] + len(indices)] for tensor in tensors]
            else:
                index = anygrad.tensor(indices, dtype=anygrad.int64, device=tensors[0].device)
                yield [tensor.index_select(0, index) for tensor in tensors]

    def __iter__(self):
        if self._iterable:
            batch = []
            for sample in self.dataset:
                batch.append(sample)
                if self.batch_size is not None and len(batch) == self.batch_size:
                    yield self.collate_fn(batch)
                    batch = []
            if batch and not self.drop_last:
                yield self.collate_fn(batch)
            return
        if isinstance(self.dataset, TensorDataset) and self._default_collate and self.batch_sampler is not None:
            yield from self._fast_batches()
            return
        if self.batch_sampler is None:
            for index in self.sampler:
                yield self.collate_fn(self.dataset[index]) if not self._default_collate else self.dataset[index]
            return
        if self.num_workers == 0:
            for indices in self.batch_sampler:
                yield self.collate_fn([self.dataset[i] for i in indices])
            return
        yield from self._threaded_batches()

    def _make_batch(self, indices):
        return self.collate_fn([self.dataset[i] for i in indices])

    def _threaded_batches(self):
        """Batches made by ``num_workers`` threads, ``prefetch_factor`` batches ahead per
        worker, yielded in order. The library releases the GIL while it decodes images and runs
        long ops, so the threads overlap with training."""
        from collections import deque
        from concurrent.futures import ThreadPoolExecutor

        ahead = self.num_workers * (self.prefetch_factor or 2)
        with ThreadPoolExecutor(max_workers=self.num_workers, thread_name_prefix="anygrad-loader") as pool:
            pending = deque()
            for indices in self.batch_sampler:
                pending.append(pool.submit(self._make_batch, indices))
                if len(pending) >= ahead:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()


def get_worker_info():
    """None: ``DataLoader`` workers are threads sharing the one dataset, and an
    ``IterableDataset`` is iterated once, in the main thread, as PyTorch's main process does
    (so a dataset that splits its work by worker reads all of it)."""
    return None


# ``torch.utils.data.dataset``, ``.dataloader`` and ``.sampler`` are submodules in PyTorch that
# scripts import from (``from torch.utils.data.dataset import Dataset``); here they name this
# module.
import sys as _sys  # noqa: E402

for _submodule in ("dataset", "dataloader", "sampler"):
    _sys.modules[f"{__name__}.{_submodule}"] = _sys.modules[__name__]
    globals()[_submodule] = _sys.modules[__name__]
del _submodule
