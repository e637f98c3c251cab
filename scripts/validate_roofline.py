#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""How close `batchscope bench --target predict --model-config --gpu` comes to
published measurements of language-model serving on GPUs.

Reads models/llm-configs/published.csv (each point's source, engine, model,
dtype, GPU, tensor parallelism, input and output lengths, load and the
measured means) and predicts each point on the roofline step cost: Poisson
arrivals at the published rate for the published number of requests, or,
offline, every request at once. Prints prediction against measurement for
TTFT and ITL means (TPOT where ITL is not published) and output tokens/s,
marks the points the constants were fitted on, and judges the points that
were not: median absolute error within 20% for ITL and throughput, 35% for
TTFT, and 70% of points within 30% on every metric (TTFT and ITL below
saturation only: the offered rate under 90% of the point's own offline
throughput).

--fit searches the roofline constants of one GPU family (coordinate descent
on the log error of the fitting points' TTFT and ITL means) and prints them;
the table in core/roofline/roofline_cost.cpp is where they are kept.
"""

import argparse
import csv
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
# What the sources leave unsaid, as assumed: the engines' batch limits.
SEQS = {"TRT14": 256, "TRT17": 2048}
TOKENS = 8192


def bench(binary, p, spec=None, requests=None):
    n = int(requests or p["requests"])
    if p["load"] == "offline":
        n = min(n, 3000)  # the steady state's throughput; 30,000 take ten times as long
    args = [binary, "bench", "--no-history", "--target", "predict",
            "--model-config", os.path.join(ROOT, "models", "llm-configs", p["model"]),
            "--tp", p["tp"], "--dtype", p["dtype"],
            "--prompt-len", f"fixed:{p['isl']}", "--max-tokens", f"fixed:{p['osl']}",
            "--max-num-seqs", str(SEQS.get(p["source"], 256)),
            "--max-num-batched-tokens", str(TOKENS), "--seed", "1",
            # Every request waits its turn, however long: as the benchmarks' clients do.
            "--queue-capacity", "1000000", "--timeout-ms", "3600000"]
    args += ["--gpu-spec", spec] if spec else ["--gpu", p["gpu"]]
    if p["load"] == "offline":
        args += ["--pattern", "constant", "--rate", "1000000", "--duration", f"{n / 1e6:.6f}"]
    else:
        rate = float(p["rate"])
        args += ["--pattern", "poisson", "--rate", p["rate"], "--duration", f"{n / rate:.3f}"]
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    try:
        r = subprocess.run(args + ["--json", out], capture_output=True, text=True)
        if r.returncode != 0:
            return {"error": (r.stderr or r.stdout).strip().splitlines()[-1]}
        s = json.load(open(out))["summary"]
        return {"ttft": s["ttft_mean_ms"], "itl": s["itl_mean_ms"], "tpot": s["tpot_mean_ms"],
                "tps": s["output_tokens_per_s"], "kv": s.get("kv_cache_tokens", 0)}
    finally:
        os.unlink(out)


def num(v):
    return float(v) if v not in ("", None) else None


def err(pred, meas):
    return pred / meas - 1 if meas else None


def family_spec(binary, gpu, constants, folder):
    """A --gpu-spec file: the table's entry with `constants`."""
    table = json.loads(subprocess.run([binary, "gpus", "--json"], capture_output=True,
                                      text=True, check=True).stdout)
    g = next(x for x in table if x["name"] == gpu)
    g["constants"] = dict(constants, fitted_on="--fit")
    path = os.path.join(folder, gpu + ".json")
    with open(path, "w") as f:
        json.dump(g, f)
    return path


def fit(binary, points, requests, names=None, start=None):
    names = names or ["memory_efficiency", "overhead_us", "compute_efficiency", "allreduce_us",
                      "request_us"]
    c = dict(start or {"compute_efficiency": 0.6, "memory_efficiency": 0.8, "overhead_us": 100,
                       "allreduce_us": 10, "request_us": 1000})  # where the search starts
    lo = {"compute_efficiency": 0.05, "memory_efficiency": 0.2, "overhead_us": 0,
          "allreduce_us": 0, "request_us": 0}
    hi = {"compute_efficiency": 1, "memory_efficiency": 1, "overhead_us": 1e5,
          "allreduce_us": 1e4, "request_us": 1e6}
    folder = tempfile.mkdtemp(prefix="roofline-fit-")

    def loss(k):
        total = 0
        for p in points:
            spec = family_spec(binary, p["gpu"], k, folder)
            # Offline points: their whole run, whose steady state is the throughput.
            r = bench(binary, p, spec, None if p["load"] == "offline" else requests)
            if "error" in r:
                return math.inf
            timed = [(k, num(p[m])) for k, m in (("ttft", "ttft_mean_ms"), ("itl", "itl_mean_ms"))
                     if num(p[m])]
            # A point with no TTFT or ITL published (offline): its output tokens/s.
            for key, meas in timed or [("tps", num(p["output_tokens_per_s"]))]:
                if meas:
                    total += math.log(r[key] / meas) ** 2
        return total

    best = loss(c)
    for step in (0.5, 0.25, 0.1, 0.05):
        improved = True
        while improved:
            improved = False
            for n in names:
                for f in (1 - step, 1 + step):
                    k = dict(c)
                    k[n] = min(hi[n], max(lo[n], c[n] * f if c[n] > 0 else step * 100))
                    value = loss(k)
                    if value < best - 1e-9:
                        best, c, improved = value, k, True
        print(f"  step {step}: loss {best:.4f} {c}", flush=True)
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--points", default=os.path.join(ROOT, "models", "llm-configs", "published.csv"))
    ap.add_argument("--fit", metavar="FAMILY", help="fit this family's constants on the fit points")
    ap.add_argument("--fit-requests", type=int, default=150)
    ap.add_argument("--fit-only", default="",
                    help="the constants to fit, comma-separated (the rest: Hopper's)")
    ap.add_argument("--csv", default="")
    a = ap.parse_args()
    points = list(csv.DictReader(open(a.points)))
    if a.fit:
        table = json.loads(subprocess.run([a.binary, "gpus", "--json"], capture_output=True,
                                          text=True, check=True).stdout)
        family = {g["name"]: g["family"] for g in table}
        fitting = [p for p in points if p["fit"] == "fit" and family.get(p["gpu"]) == a.fit]
        print(f"fitting on {len(fitting)} points: " +
              "; ".join(f"#{p['id']} {p['model']} {p['gpu']} x{p['tp']} {p['isl']}/{p['osl']} "
                        f"{p['load']} {p['rate']}" for p in fitting))
        names = [n for n in a.fit_only.split(",") if n] or None
        # Where only some are fitted, the rest are Hopper's (roofline_cost.cpp).
        hopper = {"compute_efficiency": 0.52, "memory_efficiency": 0.60, "overhead_us": 84,
                  "allreduce_us": 13.3, "request_us": 6400}
        print(json.dumps(fit(a.binary, fitting, a.fit_requests, names,
                             hopper if names else None), indent=2))
        return 0

    rows = []
    for p in points:
        r = bench(a.binary, p)
        rows.append((p, r))
        if "error" in r:
            print(f"#{p['id']:>3} {p['model']} {p['gpu']} x{p['tp']}: {r['error']}", flush=True)
            continue
        parts = []
        for key, name, meas in (("ttft", "TTFT", num(p["ttft_mean_ms"])),
                                ("itl", "ITL", num(p["itl_mean_ms"])),
                                ("tps", "tok/s", num(p["output_tokens_per_s"]))):
            if meas:
                parts.append(f"{name} {r[key]:8.1f} vs {meas:8.1f} ({100 * err(r[key], meas):+4.0f}%)")
        print(f"#{p['id']:>3} {p['source']} {p['model']:<15} {p['dtype']:<4} {p['gpu']:<13} "
              f"x{p['tp']} {p['isl']:>4}/{p['osl']:<4} {p['load']:<7} {p['rate']:>3}  "
              + "   ".join(parts) + ("  [fit]" if p["fit"] else ""), flush=True)

    # Saturation: the offered rate against the point's own offline throughput.
    offline = {}
    for p, r in rows:
        if p["load"] == "offline" and "error" not in r:
            offline[(p["source"], p["model"], p["gpu"], p["tp"], p["isl"], p["osl"])] = \
                num(p["output_tokens_per_s"]) / float(p["osl"])
    checks = {"ttft": [], "itl": [], "tps": []}
    every = []
    for p, r in rows:
        if p["fit"] or "error" in r:
            continue
        cap = offline.get((p["source"], p["model"], p["gpu"], p["tp"], p["isl"], p["osl"]))
        below = p["load"] != "offline" and (cap is None or float(p["rate"]) < 0.9 * cap)
        errs = []
        for key, meas in (("ttft", num(p["ttft_mean_ms"])), ("itl", num(p["itl_mean_ms"])),
                          ("tps", num(p["output_tokens_per_s"]))):
            if not meas or (key != "tps" and not below):
                continue
            e = abs(err(r[key], meas))
            checks[key].append(e)
            errs.append(e)
        if errs:
            every.append(max(errs) <= 0.30)
    print("\npoints not used for fitting (TTFT and ITL below saturation):")
    for key, name, target in (("ttft", "TTFT mean", 0.35), ("itl", "ITL mean", 0.20),
                              ("tps", "output tokens/s", 0.20)):
        v = checks[key]
        if v:
            m = statistics.median(v)
            print(f"  {name:<16} {len(v):>3} points, median absolute error {100 * m:5.1f}% "
                  f"(target {100 * target:.0f}%: {'met' if m <= target else 'NOT met'})")
    if every:
        share = sum(every) / len(every)
        print(f"  within 30% on every metric: {sum(every)} of {len(every)} ({100 * share:.0f}%; "
              f"target 70%: {'met' if share >= 0.7 else 'NOT met'})")
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["id", "source", "model", "dtype", "gpu", "tp", "isl", "osl", "load", "rate",
                        "fit", "ttft_measured", "ttft_predicted", "itl_measured", "itl_predicted",
                        "tps_measured", "tps_predicted", "kv_cache_tokens"])
            for p, r in rows:
                w.writerow([p[k] for k in ("id", "source", "model", "dtype", "gpu", "tp", "isl",
                                           "osl", "load", "rate", "fit")] +
                           [p["ttft_mean_ms"], r.get("ttft", ""), p["itl_mean_ms"], r.get("itl", ""),
                            p["output_tokens_per_s"], r.get("tps", ""), r.get("kv", "")])
    return 0


if __name__ == "__main__":
    sys.exit(main())
