"""torch.Generator and the global stream's state: seeded generators repeat their numbers
whatever else is drawn, leave the global stream alone, and drive the data utilities."""

import pytest

import anygrad as torch
from anygrad.utils.data import DataLoader, TensorDataset, random_split


def test_generators_seeded_alike_draw_alike_whatever_else_is_drawn(device):
    first = torch.Generator().manual_seed(123)
    second = torch.Generator().manual_seed(123)
    a = torch.randn(5, 7, generator=first, device=device)
    torch.randn(1000, device=device)  # the global stream moves; the generators do not
    b = torch.randn(5, 7, generator=second, device=device)
    assert a.tolist() == b.tolist()
    # The next draws continue each stream, and differ from the first.
    c = torch.rand(8, generator=first, device=device)
    d = torch.rand(8, generator=second, device=device)
    assert c.tolist() == d.tolist()
    assert torch.randn(5, 7, generator=torch.Generator().manual_seed(124), device=device).tolist() != a.tolist()


def test_generator_draws_leave_the_global_stream_alone(device):
    torch.manual_seed(7)
    expected = torch.rand(6, device=device).tolist()
    torch.manual_seed(7)
    generator = torch.Generator().manual_seed(99)
    torch.randint(0, 10, (50,), generator=generator, device=device)
    torch.randperm(40, generator=generator, device=device)
    assert torch.rand(6, device=device).tolist() == expected


def test_states_replay(device):
    generator = torch.Generator().manual_seed(5)
    torch.rand(3, generator=generator, device=device)
    state = generator.get_state()
    assert state.dtype == torch.uint8 and tuple(state.shape) == (16,)
    first = torch.randn(4, generator=generator, device=device).tolist()
    generator.set_state(state)
    assert torch.randn(4, generator=generator, device=device).tolist() == first
    assert generator.initial_seed() == 5

    torch.manual_seed(11)
    assert torch.initial_seed() == 11
    saved = torch.get_rng_state()
    drawn = torch.rand(5, device=device).tolist()
    torch.set_rng_state(saved)
    assert torch.rand(5, device=device).tolist() == drawn


def test_sampling_functions_take_the_generator(device):
    def draws(seed):
        generator = torch.Generator().manual_seed(seed)
        probabilities = torch.full((20,), 0.5, device=device)
        return (
            torch.normal(0.0, 1.0, size=(6,), generator=generator, device=device).tolist(),
            torch.bernoulli(probabilities, generator=generator).tolist(),
            torch.multinomial(torch.ones(10, device=device), 4, generator=generator).tolist(),
        )

    assert draws(3) == draws(3)
    assert draws(3) != draws(4)


def test_permutations_are_permutations_and_repeat(device):
    first = torch.randperm(50, generator=torch.Generator().manual_seed(1), device=device).tolist()
    second = torch.randperm(50, generator=torch.Generator().manual_seed(1), device=device).tolist()
    assert first == second and sorted(first) == list(range(50))


def test_data_utilities_follow_the_generator():
    dataset = TensorDataset(torch.arange(30))

    def split(seed):
        parts = random_split(dataset, [20, 10], generator=torch.Generator().manual_seed(seed))
        return [list(part.indices) for part in parts]

    assert split(0) == split(0)
    assert sorted(split(0)[0] + split(0)[1]) == list(range(30))

    def order(seed):
        loader = DataLoader(dataset, batch_size=7, shuffle=True, generator=torch.Generator().manual_seed(seed))
        return [value for (batch,) in loader for value in batch.tolist()]

    assert order(2) == order(2)
    assert sorted(order(2)) == list(range(30))
    assert order(2) != list(range(30))


def test_bad_generators_and_states_are_errors():
    with pytest.raises(TypeError, match="generator"):
        torch.randn(3, generator="seed 1")
    with pytest.raises(ValueError, match="16-byte"):
        torch.Generator().set_state(torch.zeros(3, dtype=torch.uint8))
    with pytest.raises(ValueError, match="16-byte"):
        torch.set_rng_state([1, 2, 3])
    with pytest.raises(TypeError, match="manual_seed"):
        torch.Generator().manual_seed(1.5)
