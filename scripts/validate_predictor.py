#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""How close `batchscope bench --target predict` comes to the live engine, as a
new user meets it: a fresh user cache (its own XDG_CACHE_HOME), so the first
prediction on each model makes its kept cost (profile, then live stepped
traffic per lane count), and every later prediction reuses it.

Points: each model (mlp, cnn_mnist, linear_128x64, the synthetic 500 + 20 b us)
x 1 and 2 lanes x poisson, burst and step x two loads: 30% of the capacity of
fifo with batches up to 16 and a 0.5 ms wait, and 60% of the capacity of
batches up to 64 and a 2 ms wait (bursts and steps peak at 140% of that
mean, at most 90% of capacity), the capacity as the kept cost gives it. Each
point is predicted once, then run live --runs times with the same arrivals
(`bench`, in process). In the default order a point is predicted just before
its own live runs, so its prediction has the kept cost as the live runs of
the points before it refined it, as a user's would be (never its own);
`--order cost-as-made` predicts every point of a model before any live run
of it, with the cost as the first prediction made it.

Per point: the error of the prediction against the median of the live runs,
and the live runs' own spread (the largest deviation of one from their
median). Targets: the median signed error over the points within +-5% at p50
and +-10% at p99; at 80% of the points, the p50 error within max(10%, 2 x the
spread) and the p99 error within max(20%, 2 x the spread). And the band:
at 80% of the points, the live median inside the prediction's band (the
figure at t(b) scaled to the kept drift's p10 and p90), with its width.

--halves runs each point twice as often and splits its runs into two sets,
A (runs 1, 3, 5, ...) and B (2, 4, 6, ...): the prediction is judged
against set A, and set B's median against set A's by the same rule, the
live engine against itself (the most a prediction can reach here).

Usage: validate_predictor.py BATCHSCOPE [--seconds S] [--runs N] [--halves]
       [--models mlp,cnn_mnist,...] [--csv OUT.csv] [--calibration-seconds S]
       [--cache DIR] [--keep-cache]
"""
import argparse
import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

MODELS = ["mlp", "cnn_mnist", "linear_128x64", "synthetic"]
PATTERNS = ["poisson", "burst", "step"]
LEVELS = [("low", 16, 0.5, 0.30), ("high", 64, 2.0, 0.60)]


def model_flags(name, models_dir):
    if name == "synthetic":
        return ["--synthetic", "500,20"]
    return ["--model", os.path.join(models_dir, name + ".pt")]


def options(lanes, batch, wait_ms):
    return ["--lanes", str(lanes), "--max-batch-size", str(batch),
            "--max-wait-ms", str(wait_ms), "--strategy", "fifo"]


def traffic(pattern, mean, capacity, seconds, seed):
    peak = min(1.4 * mean, 0.90 * capacity)
    low = max(2 * mean - peak, 1.0)
    base = ["--duration", str(seconds), "--seed", str(seed)]
    if pattern == "poisson":
        return base + ["--pattern", "poisson", "--rate", f"{mean:.0f}"]
    if pattern == "burst":
        half = seconds / 6
        return base + ["--pattern", "burst", "--rate", f"{peak:.0f}", "--rate-low", f"{low:.0f}",
                       "--on", f"{half:g}", "--off", f"{half:g}"]
    third = seconds / 3
    return base + ["--pattern", "step", "--steps",
                   f"{low:.0f}:{third:g},{peak:.0f}:{third:g},{mean:.0f}:{third:g}"]


def bench(binary, args, env):
    """Runs batchscope bench; returns its JSON summary and what it printed."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    try:
        p = subprocess.run([binary, "bench", "--no-history", "--json", out] + args, env=env,
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"bench {' '.join(args)}: exit {p.returncode}\n{p.stderr[-2000:]}")
        with open(out) as f:
            return json.load(f), p.stdout
    finally:
        os.unlink(out)


def figures(summary):
    out = {"p50": summary["latency_ms"]["p50"], "p99": summary["latency_ms"]["p99"],
           "rps": summary["throughput_rps"], "batch": summary["batch_size"]["mean"]}
    band = summary.get("band")
    if band:
        # A prediction's band: the figure again at t(b) scaled to the drift's
        # ends, holding the nominal figure.
        for key in ("p50", "p99"):
            ends = [band["latency_ms_fast"][key], band["latency_ms_slow"][key], out[key]]
            out[key + "_band"] = (min(ends), max(ends))
            # With the run's own noise: the figure over other draws of the traffic too.
            if band.get("draws"):
                ends += [band["latency_ms_draws_low"][key], band["latency_ms_draws_high"][key]]
                out[key + "_wide"] = (min(ends), max(ends))
        out["band_source"] = band.get("source", "")
    return out


def in_band(p, key, kind="_band"):
    """Whether the live median lies inside the prediction's band (None: no band);
    kind "_wide" for the band with the other draws' range."""
    b = p["predicted"].get(key + kind)
    if not b:
        return None
    med = statistics.median(r[key] for r in p["live"])
    return b[0] <= med <= b[1]


def band_width(p, key, kind="_band"):
    """The band's width over the nominal prediction."""
    b = p["predicted"].get(key + kind)
    return (b[1] - b[0]) / p["predicted"][key] if b and p["predicted"][key] > 0 else 0.0


def capacity_of(binary, flags, lanes, batch, wait, env):
    _, text = bench(binary, flags + options(lanes, batch, wait) +
                    ["--target", "predict", "--rate", "1", "--duration", "0.1"], env)
    m = re.search(r"capacity: (\d+) req/s", text)
    if not m:
        raise RuntimeError("no capacity in:\n" + text)
    return float(m.group(1)), text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--models-dir", default=os.path.join(os.path.dirname(__file__), "..", "models"))
    ap.add_argument("--csv", default="")
    ap.add_argument("--calibration-seconds", type=float, default=6)
    ap.add_argument("--cache", default="", help="the XDG_CACHE_HOME to use (default: a new one)")
    ap.add_argument("--order", choices=["refined", "cost-as-made"], default="refined")
    ap.add_argument("--halves", action="store_true")
    a = ap.parse_args()
    cache = a.cache or tempfile.mkdtemp(prefix="batchscope-validate-")
    env = dict(os.environ, XDG_CACHE_HOME=os.path.abspath(cache))
    print(f"kept costs in {cache}/batchscope/costs "
          f"({'given' if a.cache else 'fresh'}); {a.runs} live runs of {a.seconds:g} s a point; "
          f"order {a.order}")
    points = []
    for model in a.models.split(","):
        flags = model_flags(model, a.models_dir)
        start = time.time()
        _, made = capacity_of(a.binary, flags + ["--calibration-seconds",
                                                 str(a.calibration_seconds)], 1, 16, 0.5, env)
        made_line = next((l for l in made.splitlines() if "cost:" in l), "")
        print(f"\n{model}: {made_line.strip()} ({time.time() - start:.0f} s)")
        plan = []
        for lanes in (1, 2):
            for level, batch, wait, share in LEVELS:
                cap, _ = capacity_of(a.binary, flags, lanes, batch, wait, env)
                for k, pattern in enumerate(PATTERNS):
                    seed = 100 + 10 * lanes + 3 * LEVELS.index((level, batch, wait, share)) + k
                    args = flags + options(lanes, batch, wait) + traffic(
                        pattern, share * cap, cap, a.seconds, seed)
                    plan.append(dict(model=model, lanes=lanes, level=level, pattern=pattern,
                                     capacity=cap, share=share, args=args))
        if a.order == "cost-as-made":
            # Every prediction before any live run of the model.
            for p in plan:
                p["predicted"] = figures(bench(a.binary, p["args"] + ["--target", "predict"], env)[0])
        for p in plan:
            if a.order == "refined":
                # Just before its own live runs, which then refine the cost.
                p["predicted"] = figures(bench(a.binary, p["args"] + ["--target", "predict"], env)[0])
            runs = [figures(bench(a.binary, p["args"], env)[0])
                    for _ in range(a.runs * (2 if a.halves else 1))]
            p["live"] = runs[0::2] if a.halves else runs
            if a.halves:
                p["other"] = runs[1::2]
            report(p)
            points.append(p)
    summarize(points)
    if a.csv:
        write_csv(a.csv, points)
    if not a.cache:
        shutil.rmtree(cache, ignore_errors=True)


def stats(p, key):
    live = [r[key] for r in p["live"]]
    med = statistics.median(live)
    spread = max(abs(v - med) for v in live) / med if med > 0 else 0.0
    err = p["predicted"][key] / med - 1 if med > 0 else 0.0
    return med, spread, err


def other_error(p, key):
    med = statistics.median(r[key] for r in p["live"])
    other = statistics.median(r[key] for r in p["other"])
    return other / med - 1 if med > 0 else 0.0


def within_other(p):
    _, s50, _ = stats(p, "p50")
    _, s99, _ = stats(p, "p99")
    return (abs(other_error(p, "p50")) <= max(0.10, 2 * s50) and
            abs(other_error(p, "p99")) <= max(0.20, 2 * s99))


def within(p):
    _, s50, e50 = stats(p, "p50")
    _, s99, e99 = stats(p, "p99")
    return abs(e50) <= max(0.10, 2 * s50) and abs(e99) <= max(0.20, 2 * s99)


def name(p):
    return f"{p['model']:<13} x{p['lanes']} {p['level']:<4} {p['pattern']:<7}"


def report(p):
    m50, s50, e50 = stats(p, "p50")
    m99, s99, e99 = stats(p, "p99")
    print(f"  {name(p)} {p['share'] * p['capacity']:7.0f}/s  live p50 {m50:7.3f} (+-{100 * s50:3.0f}%) "
          f"p99 {m99:7.3f} (+-{100 * s99:3.0f}%)  predicted {p['predicted']['p50']:7.3f} "
          f"({100 * e50:+4.0f}%) {p['predicted']['p99']:7.3f} ({100 * e99:+4.0f}%)  "
          f"{'ok' if within(p) else 'MISS'}"
          + (f"  band p50 {'in' if in_band(p, 'p50') else 'OUT'} (width {100 * band_width(p, 'p50'):.0f}%)"
             f" p99 {'in' if in_band(p, 'p99') else 'OUT'} (width {100 * band_width(p, 'p99'):.0f}%)"
             if in_band(p, "p50") is not None else "")
          + (f"  with noise p50 {'in' if in_band(p, 'p50', '_wide') else 'OUT'}"
             f" p99 {'in' if in_band(p, 'p99', '_wide') else 'OUT'}"
             if in_band(p, "p50", "_wide") is not None else "")
          + (f"  live B {100 * other_error(p, 'p50'):+4.0f}% {100 * other_error(p, 'p99'):+4.0f}% "
             f"{'ok' if within_other(p) else 'MISS'}" if "other" in p else ""), flush=True)


def summarize(points):
    if not points:
        return
    groups = {}
    for p in points:
        for g in (f"{p['model']}, {p['lanes']} lane(s)", "all"):
            groups.setdefault(g, []).append(p)
    print("\nmisses (error against the live median; the live runs' own spread beside it):")
    for p in points:
        if not within(p):
            _, s50, e50 = stats(p, "p50")
            _, s99, e99 = stats(p, "p99")
            print(f"  {name(p)} p50 {100 * e50:+5.1f}% (spread {100 * s50:4.1f}%)  "
                  f"p99 {100 * e99:+5.1f}% (spread {100 * s99:4.1f}%)")
    print(f"\n{'group':<28} {'points':>6} {'within':>12} {'median signed p50':>18} "
          f"{'p99':>8} {'median spread p50':>18} {'p99':>8}")
    for g, ps in groups.items():
        ok = sum(within(p) for p in ps)
        e50 = statistics.median(stats(p, "p50")[2] for p in ps)
        e99 = statistics.median(stats(p, "p99")[2] for p in ps)
        s50 = statistics.median(stats(p, "p50")[1] for p in ps)
        s99 = statistics.median(stats(p, "p99")[1] for p in ps)
        print(f"{g:<28} {len(ps):>6} {ok:>5} ({100 * ok / len(ps):3.0f}%) {100 * e50:>+17.1f}% "
              f"{100 * e99:>+7.1f}% {100 * s50:>17.1f}% {100 * s99:>7.1f}%")
    if all("other" in p for p in points):
        print("\nthe live engine against itself: set B's median judged against set A's as a prediction is")
        for g, ps in groups.items():
            ok = sum(within_other(p) for p in ps)
            e50 = statistics.median(other_error(p, "p50") for p in ps)
            e99 = statistics.median(other_error(p, "p99") for p in ps)
            print(f"{g:<28} {len(ps):>6} {ok:>5} ({100 * ok / len(ps):3.0f}%) {100 * e50:>+17.1f}% "
                  f"{100 * e99:>+7.1f}%")
    for kind, title in (("_band", "the predicted band (t(b) at the kept drift's p10..p90, "
                                  "or +-15% until it is known)"),
                        ("_wide", "the band with the run's own noise (and the figure over "
                                  "other draws of the traffic at the kept t(b))")):
        banded = [p for p in points if in_band(p, "p50", kind) is not None]
        if not banded:
            continue
        print(f"\nthe live median inside {title}, and its median width over the prediction:")
        for g, ps in groups.items():
            ps = [p for p in ps if p in banded]
            if not ps:
                continue
            c50 = sum(bool(in_band(p, "p50", kind)) for p in ps)
            c99 = sum(bool(in_band(p, "p99", kind)) for p in ps)
            w50 = statistics.median(band_width(p, "p50", kind) for p in ps)
            w99 = statistics.median(band_width(p, "p99", kind) for p in ps)
            print(f"{g:<28} {len(ps):>6}  p50 {c50:>3} ({100 * c50 / len(ps):3.0f}%) width "
                  f"{100 * w50:4.0f}%   p99 {c99:>3} ({100 * c99 / len(ps):3.0f}%) width {100 * w99:4.0f}%")
        for p in banded:
            if not (in_band(p, "p50", kind) and in_band(p, "p99", kind)):
                m50 = statistics.median(r["p50"] for r in p["live"])
                m99 = statistics.median(r["p99"] for r in p["live"])
                b50, b99 = p["predicted"]["p50" + kind], p["predicted"]["p99" + kind]
                print(f"  outside: {name(p)} p50 {m50:.3f} in {b50[0]:.3f}..{b50[1]:.3f}, "
                      f"p99 {m99:.3f} in {b99[0]:.3f}..{b99[1]:.3f} ({p['predicted']['band_source']})")
    ps = groups["all"]
    e50 = statistics.median(stats(p, "p50")[2] for p in ps)
    e99 = statistics.median(stats(p, "p99")[2] for p in ps)
    share = sum(within(p) for p in ps) / len(ps)
    print(f"\ntargets: median signed error p50 {100 * e50:+.1f}% (within +-5%: "
          f"{'met' if abs(e50) <= 0.05 else 'NOT met'}), p99 {100 * e99:+.1f}% (within +-10%: "
          f"{'met' if abs(e99) <= 0.10 else 'NOT met'}); {100 * share:.0f}% of points within "
          f"their bounds (80%: {'met' if share >= 0.8 else 'NOT met'})")


def write_csv(path, points):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "lanes", "level", "pattern", "rate", "capacity", "live_p50_ms",
                    "spread_p50", "predicted_p50_ms", "error_p50", "live_p99_ms", "spread_p99",
                    "predicted_p99_ms", "error_p99", "live_rps", "predicted_rps", "live_batch",
                    "predicted_batch", "within", "runs_p50_ms", "runs_p99_ms", "live_b_p50_ms",
                    "live_b_p99_ms", "live_b_within", "band_p50_ms", "band_p99_ms",
                    "in_band_p50", "in_band_p99", "wide_p50_ms", "wide_p99_ms",
                    "in_wide_p50", "in_wide_p99"])
        for p in points:
            m50, s50, e50 = stats(p, "p50")
            m99, s99, e99 = stats(p, "p99")
            w.writerow([p["model"], p["lanes"], p["level"], p["pattern"],
                        round(p["share"] * p["capacity"]), round(p["capacity"]), m50, s50,
                        p["predicted"]["p50"], e50, m99, s99, p["predicted"]["p99"], e99,
                        statistics.median(r["rps"] for r in p["live"]), p["predicted"]["rps"],
                        statistics.median(r["batch"] for r in p["live"]), p["predicted"]["batch"],
                        int(within(p)), " ".join(f"{r['p50']:.4f}" for r in p["live"]),
                        " ".join(f"{r['p99']:.4f}" for r in p["live"])] +
                       ([statistics.median(r["p50"] for r in p["other"]),
                         statistics.median(r["p99"] for r in p["other"]), int(within_other(p))]
                        if "other" in p else ["", "", ""]) +
                       ([" ".join(f"{v:.4f}" for v in p["predicted"]["p50_band"]),
                         " ".join(f"{v:.4f}" for v in p["predicted"]["p99_band"]),
                         int(in_band(p, "p50")), int(in_band(p, "p99"))]
                        if in_band(p, "p50") is not None else ["", "", "", ""]) +
                       ([" ".join(f"{v:.4f}" for v in p["predicted"]["p50_wide"]),
                         " ".join(f"{v:.4f}" for v in p["predicted"]["p99_wide"]),
                         int(in_band(p, "p50", "_wide")), int(in_band(p, "p99", "_wide"))]
                        if in_band(p, "p50", "_wide") is not None else ["", "", "", ""]))


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as e:
        print(f"validate-predictor: {e}", file=sys.stderr)
        sys.exit(1)
