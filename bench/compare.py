#!/usr/bin/env python3
"""Put anygrad's and PyTorch's benchmark figures side by side as a Markdown table.

Input: one or more JSON-lines files as printed by `anygrad bench <workload> --json` and by
`bench/pytorch_reference.py` (one object per line with bench, framework, device, dtype, size,
median_ms, min_ms, max_ms, iterations, value, unit). The two frameworks may be in separate
files or mixed in one; "environment"/"env" lines and lines that are not JSON are skipped
(so a captured log can be fed directly), error lines show as "error". Records are joined on
(bench, dtype, size); when a key repeats within a framework the last record wins.

Output (stdout): a Markdown table
    bench | dtype | size | anygrad | pytorch | unit | speed ratio
where the speed ratio is > 1 when anygrad is faster:
  - higher-is-better units (GFLOPS, GB/s, images/s, ...): anygrad / pytorch
  - lower-is-better units (ms/epoch, us/op, ms, ...):     pytorch / anygrad  (time ratio)
followed by the devices seen and the geometric mean of the ratios.

How to run:
    python3 bench/compare.py anygrad.jsonl pytorch.jsonl > comparison.md
    python3 bench/compare.py both.jsonl                  # one file holding both frameworks
    python3 bench/compare.py a.jsonl b.jsonl --baseline numpy --only-matched
Only the standard library is needed.
"""

import argparse
import json
import math
import sys

LOWER_IS_BETTER = {"ms/epoch", "us/op", "ms", "s", "us", "ms/step", "ms/iter", "bytes"}
DTYPE_ALIASES = {"f32": "float32", "f16": "float16", "f64": "float64", "bf16": "bfloat16"}
SKIP_BENCHES = {"environment", "env"}
# Rows are listed in this order of benches, then any other bench in order of appearance.
CANONICAL_ORDER = ["matmul", "elementwise", "elementwise-addcmul", "copy", "overhead", "mlp",
                   "resnet18", "resnet18-train"]


def lower_is_better(unit):
    return unit in LOWER_IS_BETTER or (unit or "").startswith(("ms/", "us/", "s/"))


def normalize(rec):
    """Fill `value`/`unit` for older records (e.g. {"gflops": ...}), alias dtypes."""
    rec = dict(rec)
    if "value" not in rec and "gflops" in rec:
        rec["value"], rec["unit"] = rec["gflops"], "GFLOPS"
    rec["dtype"] = DTYPE_ALIASES.get(rec.get("dtype"), rec.get("dtype"))
    rec["size"] = None if rec.get("size") is None else str(rec["size"])
    return rec


def load(paths):
    records, environments, order = {}, [], []
    for path in paths:
        with open(path) as f:
            for lineno, line in enumerate(f, 1):
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    print(f"warning: {path}:{lineno}: not JSON, skipped", file=sys.stderr)
                    continue
                if rec.get("bench") in SKIP_BENCHES:
                    environments.append(rec)
                    continue
                if "bench" not in rec or "framework" not in rec:
                    continue
                rec = normalize(rec)
                key = (rec["bench"], rec["dtype"], rec["size"])
                if key not in order:
                    order.append(key)
                records[(rec["framework"],) + key] = rec
    return records, environments, order


def fmt(value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    a = abs(value)
    if a >= 1000:
        return f"{value:,.0f}"
    if a >= 100:
        return f"{value:.1f}"
    if a >= 1:
        return f"{value:.2f}"
    return f"{value:#.3g}"


def cell(rec):
    if rec is None:
        return "—", None
    if "error" in rec or rec.get("value") is None:
        return "error", None
    return fmt(rec["value"]), float(rec["value"])


def size_key(size):
    try:
        return (0, int(size), "")
    except (TypeError, ValueError):
        return (1, 0, str(size))


def main():
    parser = argparse.ArgumentParser(description="Markdown comparison of bench JSON lines.")
    parser.add_argument("files", nargs="+", help="JSONL files (anygrad's and PyTorch's)")
    parser.add_argument("--candidate", default="anygrad", help="framework in the first column")
    parser.add_argument("--baseline", default="pytorch", help="framework to compare against")
    parser.add_argument("--only-matched", action="store_true",
                        help="only rows present for both frameworks")
    args = parser.parse_args()

    records, environments, order = load(args.files)
    cand, base = args.candidate, args.baseline
    bench_rank = {bench: i for i, bench in enumerate(CANONICAL_ORDER)}
    for bench, _, _ in order:
        bench_rank.setdefault(bench, len(bench_rank))
    keys = sorted(order, key=lambda k: (bench_rank[k[0]], str(k[1]), size_key(k[2])))

    print(f"Speed ratio = {cand} / {base} for higher-is-better units (GFLOPS, GB/s, images/s); "
          f"= {base} time / {cand} time for lower-is-better units (ms/epoch, us/op). "
          f"In both cases > 1 means {cand} is faster.\n")
    print(f"| bench | dtype | size | {cand} | {base} | unit | speed ratio ({cand} vs {base}, >1 = {cand} faster) |")
    print("|---|---|---|---:|---:|---|---:|")
    ratios = []
    rows = 0
    for key in keys:
        c_rec, b_rec = records.get((cand,) + key), records.get((base,) + key)
        if c_rec is None and b_rec is None:
            continue  # a key seen only for other frameworks
        if args.only_matched and (c_rec is None or b_rec is None):
            continue
        c_text, c_val = cell(c_rec)
        b_text, b_val = cell(b_rec)
        unit = (c_rec or {}).get("unit") or (b_rec or {}).get("unit") or ""
        if c_rec and b_rec and c_rec.get("unit") and b_rec.get("unit") \
                and c_rec["unit"] != b_rec["unit"]:
            unit = f"{c_rec['unit']} vs {b_rec['unit']}"
            ratio = None  # not comparable
        elif c_val and b_val:
            ratio = b_val / c_val if lower_is_better(unit) else c_val / b_val
            ratios.append(ratio)
        else:
            ratio = None
        arrow = " (lower is better)" if lower_is_better(unit) else ""
        ratio_text = "—" if ratio is None else f"{ratio:.2f}×"
        bench, dtype, size = key
        print(f"| {bench} | {dtype or ''} | {size or ''} | {c_text} | {b_text} | {unit}{arrow} | {ratio_text} |")
        rows += 1

    devices = {}
    for (framework, *_), rec in records.items():
        if framework in (cand, base) and rec.get("device"):
            devices.setdefault(framework, set()).add(rec["device"])
    print()
    for framework in (cand, base):
        if framework in devices:
            print(f"- {framework} device: {', '.join(sorted(devices[framework]))}")
    for env in environments:
        if env.get("framework", "pytorch") == base and env.get("torch"):
            print(f"- {base} environment: torch {env.get('torch')}, CUDA {env.get('cuda')}, "
                  f"cuDNN {env.get('cudnn')}, {env.get('device_name') or env.get('cpu')}")
            break
    if ratios:
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"- geometric mean speed ratio over {len(ratios)} matched rows: {geo:.2f}×")
    if rows == 0:
        print(f"(no {cand} or {base} records found)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
