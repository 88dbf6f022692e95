"""Where the host time of a training step goes, from Python: the digits MLP (64-128-64-10,
Adam, batch 32, random data of the digits' shape resident on the device, reshuffled each
epoch by a device permutation), timed phase by phase — the batch gather (`x[idx]`), zero_grad,
forward and loss, backward, optimizer step — with no synchronization inside the step. The
same loop as `examples/step_phases.rs` (Rust) and `anygrad bench mlp`.

    python3 bench/step_phases.py --framework anygrad --device gpu   # anygrad's package
    python3 bench/step_phases.py --framework torch --device cuda    # PyTorch
"""

import argparse
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=["anygrad", "torch"], default="anygrad")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()
    if args.framework == "torch":
        import torch
    else:
        import anygrad as torch
    nn = torch.nn
    device = args.device

    def synchronize():
        if args.framework == "torch" and device.startswith("cuda"):
            torch.cuda.synchronize()

    torch.manual_seed(0)
    count = 1437  # the digits' training split
    x = torch.randn(count, 64, device=device)
    y = torch.randint(0, 10, (count,), device=device)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()
    clock = time.perf_counter
    phases = [0.0] * 5
    steps, total, warm_up = 0, 0.0, 2
    for epoch in range(warm_up + args.epochs):
        started = clock()
        order = torch.randperm(count, device=device)
        for first in range(0, count, 32):
            marks = [clock()]
            index = order[first:first + 32]
            inputs, labels = x[index], y[index]
            marks.append(clock())
            optimizer.zero_grad()
            marks.append(clock())
            loss = criterion(model(inputs), labels)
            marks.append(clock())
            loss.backward()
            marks.append(clock())
            optimizer.step()
            marks.append(clock())
            if epoch >= warm_up:
                for phase in range(5):
                    phases[phase] += marks[phase + 1] - marks[phase]
                steps += 1
        loss.item()
        synchronize()
        if epoch >= warm_up:
            total += clock() - started
    each = [p / steps * 1e6 for p in phases]
    print(
        f"{args.framework} {device}: µs a step: batch {each[0]:.1f}, zero_grad {each[1]:.1f}, "
        f"forward and loss {each[2]:.1f}, backward {each[3]:.1f}, step {each[4]:.1f}; "
        f"epoch {total / args.epochs * 1e3:.2f} ms"
    )


if __name__ == "__main__":
    main()
