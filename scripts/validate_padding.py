#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The predictor against the live engine for each padding policy.

On models/text_classifier.pt with lengths lognormal (median 32, sigma 1, up
to 256), Poisson traffic at each rate, batches up to 32, max wait 2 ms and
buckets at 32, 64, 128, 256: each (rate, policy) point is predicted with
the kept cost (made on first use in a fresh cache: a profile with t(b, L),
then a live calibration), then run live --runs times (seeds 1, 2, ...).
Prints, per point, predicted against the live median with the live runs'
range, for answers/s, p50, p99 and the padding waste; then the median signed
error over the points, for p50 and p99, and how many points fall within
the live runs' own range or max(10%, 2 x spread) at p50 (20% at p99).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

POLICIES = ["longest", "buckets", "sorted"]


def bench(binary, args, env):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    try:
        p = subprocess.run([binary, "bench", "--no-history", "--json", out] + args, env=env,
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"bench {' '.join(args)}: exit {p.returncode}\n{p.stderr[-2000:]}")
        with open(out) as f:
            s = json.load(f)
    finally:
        os.unlink(out)
    return {"rps": s["throughput_rps"], "p50": s["latency_ms"]["p50"],
            "p99": s["latency_ms"]["p99"], "waste": s.get("padding", {}).get("waste", 0.0),
            "batch": s["batch_size"]["mean"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--model", default="models/text_classifier.pt")
    ap.add_argument("--rates", default="100,250")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seq-len", default="lognormal:32,1,256")
    ap.add_argument("--cache", default="", help="the XDG_CACHE_HOME to use (default: a new one)")
    a = ap.parse_args()
    env = dict(os.environ)
    env["XDG_CACHE_HOME"] = a.cache or tempfile.mkdtemp(prefix="batchscope-padding-")
    common = ["--model", a.model, "--pattern", "poisson", "--duration", str(a.seconds),
              "--seq-len", a.seq_len, "--max-batch-size", "32", "--max-wait-ms", "2",
              "--length-buckets", "32,64,128,256"]
    points = []
    for rate in a.rates.split(","):
        for policy in POLICIES:
            args = common + ["--rate", rate, "--padding", policy]
            predicted = bench(a.binary, args + ["--target", "predict", "--seed", "1"], env)
            live = [bench(a.binary, args + ["--seed", str(s + 1)], env) for s in range(a.runs)]
            points.append((rate, policy, predicted, live))
            report(rate, policy, predicted, live)
            sys.stdout.flush()
    summarize(points)


def report(rate, policy, p, live):
    def cell(key, fmt):
        v = sorted(r[key] for r in live)
        return f"{fmt.format(p[key])} vs {fmt.format(statistics.median(v))} " \
               f"({fmt.format(v[0])}-{fmt.format(v[-1])})"
    print(f"{rate:>5}/s {policy:8} answers/s {cell('rps', '{:.0f}')}  p50 {cell('p50', '{:.1f}')}"
          f"  p99 {cell('p99', '{:.1f}')}  waste {cell('waste', '{:.3f}')}"
          f"  batch {p['batch']:.2f} vs {statistics.median(r['batch'] for r in live):.2f}")


def summarize(points):
    for key, floor in (("p50", 0.10), ("p99", 0.20)):
        errors, inside = [], 0
        for _, _, p, live in points:
            v = sorted(r[key] for r in live)
            m = statistics.median(v)
            err = (p[key] - m) / m if m > 0 else 0.0
            errors.append(err)
            spread = (v[-1] - v[0]) / (2 * m) if m > 0 else 0.0
            if v[0] <= p[key] <= v[-1] or abs(err) <= max(floor, 2 * spread):
                inside += 1
        print(f"{key}: median signed error {100 * statistics.median(errors):+.1f}%, "
              f"{inside} of {len(points)} points within the live range or "
              f"max({100 * floor:.0f}%, 2 x spread)")


if __name__ == "__main__":
    main()
