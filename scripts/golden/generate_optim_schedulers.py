#!/usr/bin/env python3
"""Generate golden values for anygrad-nn's RMSprop, Adagrad, parameter groups and
learning-rate schedulers from PyTorch.

Writes crates/nn/tests/golden/optim_schedulers.json:
- "optimizers": 10 steps of each optimizer on 0.5 * sum(a * (p - c)^2) over one or more
  parameters, each parameter in its own group when the case has several groups; the
  parameters after every step.
- "schedulers": the learning rate of every parameter group (and the momentum, for
  OneCycleLR) right after construction and after each of 30 steps; ReduceLROnPlateau is fed
  a fixed metric sequence.

Run once with a torch venv (`pip install torch`):

    /tmp/torchenv/bin/python scripts/golden/generate_optim_schedulers.py

The Rust test crates/nn/tests/optim_golden.rs reads the file; `cargo test` never needs Python.
"""
import json
import math
import os

import torch

torch.manual_seed(4321)
torch.set_default_dtype(torch.float64)
OUT = os.path.join(os.path.dirname(__file__), "..", "..", "crates", "nn", "tests", "golden",
                   "optim_schedulers.json")
STEPS = 10
SCHEDULE_STEPS = 30


def floats(t):
    return [float(f"{v:.10g}") for v in t.detach().reshape(-1).tolist()]


def optimizer_case(name, make, groups_options, sizes):
    """`groups_options[i]` are the options of group i, which holds one parameter of
    `sizes[i]` elements."""
    params = [torch.randn(n).requires_grad_(True) for n in sizes]
    a = [torch.rand(n) + 0.5 for n in sizes]
    c = [torch.randn(n) for n in sizes]
    initial = [floats(p) for p in params]
    groups = [dict({"params": [p]}, **opts) for p, opts in zip(params, groups_options)]
    opt = make(groups)
    trajectory = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = sum((0.5 * ai * (p - ci) ** 2).sum() for p, ai, ci in zip(params, a, c))
        loss.backward()
        opt.step()
        trajectory.append([floats(p) for p in params])
    return {"name": name, "groups": groups_options, "initial": initial,
            "a": [floats(x) for x in a], "center": [floats(x) for x in c],
            "trajectory": trajectory}


optimizers = [
    optimizer_case("rmsprop_defaults", lambda g: torch.optim.RMSprop(g), [{"lr": 0.01}], [4]),
    optimizer_case("rmsprop_momentum_wd", lambda g: torch.optim.RMSprop(g),
                   [{"lr": 0.02, "alpha": 0.9, "eps": 1e-6, "weight_decay": 0.1, "momentum": 0.8}], [4]),
    optimizer_case("rmsprop_centered", lambda g: torch.optim.RMSprop(g),
                   [{"lr": 0.01, "centered": True, "momentum": 0.5}], [4]),
    optimizer_case("adagrad_defaults", lambda g: torch.optim.Adagrad(g), [{"lr": 0.1}], [4]),
    # PyTorch seeds the accumulator from the constructor's initial_accumulator_value only (a
    # group's own value is ignored), so the case passes it to the constructor as well.
    optimizer_case("adagrad_decay_wd_init", lambda g: torch.optim.Adagrad(g, initial_accumulator_value=0.3),
                   [{"lr": 0.2, "lr_decay": 0.05, "weight_decay": 0.1,
                     "initial_accumulator_value": 0.3, "eps": 1e-8}], [4]),
    optimizer_case("sgd_groups", lambda g: torch.optim.SGD(g),
                   [{"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01},
                    {"lr": 0.01, "momentum": 0.0, "weight_decay": 0.0}], [3, 2]),
    optimizer_case("adamw_groups", lambda g: torch.optim.AdamW(g),
                   [{"lr": 0.05, "weight_decay": 0.1, "betas": [0.9, 0.999]},
                    {"lr": 0.01, "weight_decay": 0.0, "betas": [0.8, 0.99]}], [3, 2]),
    optimizer_case("adam_groups", lambda g: torch.optim.Adam(g),
                   [{"lr": 0.05, "weight_decay": 0.1, "amsgrad": True},
                    {"lr": 0.02}], [3, 2]),
    optimizer_case("rmsprop_groups", lambda g: torch.optim.RMSprop(g),
                   [{"lr": 0.01}, {"lr": 0.03, "momentum": 0.9, "centered": True}], [3, 2]),
    optimizer_case("adagrad_groups", lambda g: torch.optim.Adagrad(g),
                   [{"lr": 0.1}, {"lr": 0.3, "lr_decay": 0.1}], [3, 2]),
]


def lrs_of(opt):
    return [g["lr"] for g in opt.param_groups]


def momenta_of(opt):
    out = []
    for g in opt.param_groups:
        out.append(g["betas"][0] if "betas" in g else g.get("momentum", 0.0))
    return out


def scheduler_case(name, options, base_lrs, make, optimizer="sgd", metrics=None, momentum=False):
    params = [torch.zeros(1, requires_grad=True) for _ in base_lrs]
    groups = [{"params": [p], "lr": lr} for p, lr in zip(params, base_lrs)]
    if optimizer == "sgd":
        opt = torch.optim.SGD(groups, lr=base_lrs[0], momentum=0.9)
    elif optimizer == "adam":
        opt = torch.optim.Adam(groups, lr=base_lrs[0])
    else:
        opt = torch.optim.Adagrad(groups, lr=base_lrs[0])
    sched = make(opt)
    lrs = [lrs_of(opt)]
    moms = [momenta_of(opt)]
    for step in range(SCHEDULE_STEPS):
        opt.step()
        if metrics is not None:
            sched.step(metrics[step])
        else:
            sched.step()
        lrs.append(lrs_of(opt))
        moms.append(momenta_of(opt))
    case = {"name": name, "options": options, "optimizer": optimizer, "base_lrs": base_lrs,
            "lrs": lrs}
    if metrics is not None:
        case["metrics"] = metrics
    if momentum:
        case["momentums"] = moms
    return case


S = torch.optim.lr_scheduler
plateau_metrics = [1.0, 0.9, 0.85, 0.85, 0.86, 0.84999, 0.9, 0.9, 0.7, 0.7,
                   0.7, 0.7, 0.7, 0.69, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7,
                   0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]
acc_metrics = [0.1, 0.2, 0.3, 0.3, 0.3, 0.31, 0.3, 0.3, 0.3, 0.3,
               0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5,
               0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
schedulers = [
    scheduler_case("multistep", {"type": "multistep", "milestones": [5, 12, 12, 20], "gamma": 0.5},
                   [0.1, 0.02], lambda o: S.MultiStepLR(o, milestones=[5, 12, 12, 20], gamma=0.5)),
    scheduler_case("linear_defaults", {"type": "linear", "start_factor": 1 / 3, "end_factor": 1.0,
                                       "total_iters": 5},
                   [0.1], lambda o: S.LinearLR(o)),
    scheduler_case("linear_decay", {"type": "linear", "start_factor": 1.0, "end_factor": 0.1,
                                    "total_iters": 20},
                   [0.1, 0.3], lambda o: S.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=20)),
    scheduler_case("lambda_exp", {"type": "lambda_exp", "gamma": 0.9},
                   [0.1, 0.01], lambda o: S.LambdaLR(o, lambda e: 0.9 ** e)),
    scheduler_case("step_groups", {"type": "step", "step_size": 4, "gamma": 0.3},
                   [0.1, 0.05], lambda o: S.StepLR(o, step_size=4, gamma=0.3)),
    scheduler_case("sequential_warmup_cosine",
                   {"type": "sequential", "milestones": [5],
                    "warmup": {"start_factor": 0.1, "end_factor": 1.0, "total_iters": 5},
                    "cosine": {"t_max": 25, "eta_min": 0.001}},
                   [0.1, 0.02],
                   lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.1, total_iters=5),
                                                S.CosineAnnealingLR(o, T_max=25, eta_min=0.001)],
                                            milestones=[5])),
    scheduler_case("sequential_three",
                   {"type": "sequential3", "milestones": [3, 10]},
                   [0.2],
                   lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.5, total_iters=3),
                                                S.StepLR(o, step_size=2, gamma=0.8),
                                                S.MultiStepLR(o, milestones=[5, 9], gamma=0.1)],
                                            milestones=[3, 10])),
    scheduler_case("onecycle_defaults_sgd", {"type": "onecycle", "max_lr": [0.5], "total_steps": 30},
                   [0.1], lambda o: S.OneCycleLR(o, max_lr=0.5, total_steps=30), momentum=True),
    scheduler_case("onecycle_groups_adam",
                   {"type": "onecycle", "max_lr": [0.01, 0.1], "total_steps": 30, "pct_start": 0.25},
                   [0.001, 0.001],
                   lambda o: S.OneCycleLR(o, max_lr=[0.01, 0.1], total_steps=30, pct_start=0.25),
                   optimizer="adam", momentum=True),
    scheduler_case("onecycle_three_phase_linear",
                   {"type": "onecycle", "max_lr": [1.0], "total_steps": 30, "three_phase": True,
                    "linear": True, "div_factor": 10.0, "final_div_factor": 100.0,
                    "cycle_momentum": False},
                   [0.1],
                   lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=30, three_phase=True,
                                          anneal_strategy="linear", div_factor=10.0,
                                          final_div_factor=100.0, cycle_momentum=False),
                   optimizer="adagrad"),
    scheduler_case("plateau_defaults_patience2",
                   {"type": "plateau", "patience": 2},
                   [0.1, 0.01], lambda o: S.ReduceLROnPlateau(o, patience=2), metrics=plateau_metrics),
    scheduler_case("plateau_max_abs_cooldown_minlr",
                   {"type": "plateau", "mode": "max", "factor": 0.5, "patience": 1,
                    "threshold": 0.05, "threshold_mode": "abs", "cooldown": 2, "min_lr": 0.02},
                   [0.1], lambda o: S.ReduceLROnPlateau(o, mode="max", factor=0.5, patience=1,
                                                        threshold=0.05, threshold_mode="abs",
                                                        cooldown=2, min_lr=0.02),
                   metrics=acc_metrics),
]

with open(OUT, "w") as f:
    json.dump({"torch_version": torch.__version__, "optimizers": optimizers,
               "schedulers": schedulers}, f, separators=(",", ":"))
print("wrote", OUT, os.path.getsize(OUT), "bytes")
