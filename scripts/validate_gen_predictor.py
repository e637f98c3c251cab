#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""How close `batchscope bench --target predict` comes to the live generation
engine, point by point, in the terms of the engine's own noise.

Points: the synthetic model (2000 + 20 per token us, its exact cost) and
tiny_lm (its step cost measured once by `bench --cost-out` from 6 s of the
first point's traffic, then given to every prediction with --cost) x
continuous and static scheduling x two length mixes (prompts of 16-64 bytes
with max_tokens lognormal median 32, sigma 1, at most 512; prompts of
64-256 bytes with max_tokens uniform 8..64) x Poisson at 20, 40, 60 and 80%
of continuous scheduling's capacity as the step cost gives it; plus, for
each model and scheduling, an Azure-format trace (TIMESTAMP, ContextTokens,
GeneratedTokens) written with a seed at 40% of capacity. Each point is
predicted once and run live --runs times (default 3) with the same
arrivals and lengths, in process.

Per point and figure (TTFT p50 and p99, ITL p50 and p99, output tokens/s):
the prediction's error against the median of the live runs, and the live
runs' spread (the largest deviation of one from their median). Targets: the
median signed error within +-10% for TTFT p50, ITL p50 and tokens/s; at 80%
of the points, those within max(15%, 2 x spread) and TTFT p99 and ITL p99
within max(25%, 2 x spread).

With --lanes N every run, the calibration included, has N engine lanes,
and the rates are N times as high.

Usage: validate_gen_predictor.py BATCHSCOPE [--runs N] [--seconds S]
       [--models synthetic,tiny_lm] [--schedulings continuous,static]
       [--lanes N] [--csv OUT.csv]
"""
import argparse
import csv
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta

FIGURES = [("ttft_p50", "ttft_ms", "p50", 0.15), ("itl_p50", "itl_ms", "p50", 0.15),
           ("tokens_s", "tokens_per_s", None, 0.15), ("ttft_p99", "ttft_ms", "p99", 0.25),
           ("itl_p99", "itl_ms", "p99", 0.25)]
MIXES = {"lognormal": ["--prompt-len", "uniform:16,64", "--max-tokens", "lognormal:32,1,512"],
         "short": ["--prompt-len", "uniform:64,256", "--max-tokens", "uniform:8,64"]}
MEAN = {"lognormal": (40, 32 * math.exp(0.5)), "short": (160, 36)}  # prompt, output tokens


def run(bs, args, out):
    cmd = [bs, "bench", *args, "--no-history", "--json", out]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout}")
    s = json.load(open(out))["summary"]
    return {name: (s[key][q] if q else s[key]) for name, key, q, _ in FIGURES}


def capacity_rps(cost, mix, seqs=32):
    prompt, output = MEAN[mix]
    per_request = output * (cost["step_us"] / seqs + cost["token_us"]) + prompt * cost["prefill_token_us"]
    return 1e6 / per_request


def azure_trace(path, rate, seconds, seed):
    rng = random.Random(seed)
    t, start = 0.0, datetime(2023, 11, 16, 18, 0, 0)
    with open(path, "w") as f:
        f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
        while t < seconds:
            when = start + timedelta(seconds=t)
            f.write(f"{when:%Y-%m-%d %H:%M:%S.%f}0,{rng.randint(16, 200)},"
                    f"{min(512, max(1, int(rng.lognormvariate(math.log(32), 1))))}\n")
            t += rng.expovariate(rate)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("batchscope")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--models", default="synthetic,tiny_lm")
    ap.add_argument("--schedulings", default="continuous,static")
    ap.add_argument("--lanes", type=int, default=1)
    ap.add_argument("--csv")
    a = ap.parse_args()
    bs = os.path.abspath(a.batchscope)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    work = tempfile.mkdtemp(prefix="validate-gen-")
    points = []
    for model in a.models.split(","):
        lanes = ["--lanes", str(a.lanes)] if a.lanes > 1 else []
        if model == "synthetic":
            base = ["--synthetic-lm", "2000,20", *lanes]
            cost = {"step_us": 2000, "token_us": 20, "prefill_token_us": 20}
            priced = []
        else:
            base = ["--model", os.path.join(root, "models", f"{model}.pt"), *lanes]
            cost_file = os.path.join(work, f"{model}_cost.json")
            subprocess.run([bs, "bench", *base, "--rate", "10", "--duration", "6", *MIXES["lognormal"],
                            "--no-history", "--cost-out", cost_file], check=True,
                           stdout=subprocess.DEVNULL)
            cost = json.load(open(cost_file))
            priced = ["--cost", cost_file]
        for sched in a.schedulings.split(","):
            capacity = lambda mix: a.lanes * capacity_rps(cost, mix)
            cases = [(mix, f, ["--rate", f"{f * capacity(mix):.2f}", *MIXES[mix]])
                     for mix in MIXES for f in (0.2, 0.4, 0.6, 0.8)]
            trace = os.path.join(work, f"azure_{model}.csv")
            azure_trace(trace, 0.4 * capacity("lognormal"), a.seconds, 11)
            cases.append(("azure", 0.4, ["--trace", trace]))
            for mix, f, traffic in cases:
                args = [*base, "--scheduling", sched, "--max-num-seqs", "32", "--duration",
                        str(a.seconds), "--seed", "5", *traffic]
                predicted = run(bs, [*args, "--target", "predict", *priced], os.path.join(work, "p.json"))
                live = [run(bs, args, os.path.join(work, "l.json")) for _ in range(a.runs)]
                point = {"model": model, "scheduling": sched, "mix": mix, "load": f}
                for name, _, _, _ in FIGURES:
                    values = [r[name] for r in live]
                    m = statistics.median(values)
                    point[name] = (predicted[name] / m - 1 if m > 0 else 0.0,
                                   max(abs(v - m) for v in values) / m if m > 0 else 0.0, m,
                                   predicted[name])
                points.append(point)
                print(f"{model:9} {sched:10} {mix:9} {f:.0%}: " + "  ".join(
                    f"{n} {point[n][0]:+.0%} (spread {point[n][1]:.0%})" for n, _, _, _ in FIGURES),
                    flush=True)
    within = lambda p, n, floor: abs(p[n][0]) <= max(floor, 2 * p[n][1])
    print("\nmedian signed error (target within +-10% for the first three):")
    for n, _, _, _ in FIGURES:
        print(f"  {n:9} {statistics.median(p[n][0] for p in points):+.1%}   live spread (median) "
              f"{statistics.median(p[n][1] for p in points):.1%}")
    ok = [p for p in points if all(within(p, n, floor) for n, _, _, floor in FIGURES)]
    print(f"\npoints within max(15%|25%, 2 x spread) on every figure: {len(ok)} of {len(points)} "
          f"({len(ok) / len(points):.0%}; target 80%)")
    for n, _, _, floor in FIGURES:
        print(f"  {n:9} {sum(within(p, n, floor) for p in points)} of {len(points)}")
    print("misses:")
    for p in points:
        bad = [f"{n} {p[n][0]:+.0%} (spread {p[n][1]:.0%})" for n, _, _, floor in FIGURES
               if not within(p, n, floor)]
        if bad:
            print(f"  {p['model']} {p['scheduling']} {p['mix']} {p['load']:.0%}: " + ", ".join(bad))
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["model", "scheduling", "mix", "load"] +
                       [f"{n}_{k}" for n, _, _, _ in FIGURES for k in ("error", "spread", "live", "predicted")])
            for p in points:
                w.writerow([p["model"], p["scheduling"], p["mix"], p["load"]] +
                           [x for n, _, _, _ in FIGURES for x in p[n]])


if __name__ == "__main__":
    main()
