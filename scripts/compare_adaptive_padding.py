#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Two builds' adaptive strategy side by side on requests of varying length.

Usage: compare_adaptive_padding.py OLD_BINARY NEW_BINARY RATES PADDINGS
(e.g. 100,250 longest,buckets). On models/text_classifier.pt with lengths
lognormal (median 32, sigma 1, up to 256), Poisson arrivals, batches up to
32, max wait 10 ms, a 50 ms p99 target: each (rate, padding) point runs with
seeds 1 to 3, 10 s each, the two builds in turn, and fifo under `longest`
beside them; a fresh cache, so the strategy plans on its own fit. Prints
each run, then the medians with the range.
"""
import json, subprocess, sys, os, statistics, tempfile
BIN = {"before": sys.argv[1], "after": sys.argv[2]}
env = dict(os.environ); env["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="batchscope-adaptive-")
def bench(binary, args):
    out = tempfile.mktemp(suffix=".json")
    p = subprocess.run([binary, "bench", "--no-history", "--json", out] + args, env=env, capture_output=True, text=True)
    if p.returncode: print(p.stderr[-1500:]); sys.exit(1)
    s = json.load(open(out)); os.unlink(out)
    return (s["throughput_rps"], s["latency_ms"]["p50"], s["latency_ms"]["p99"], s["padding"]["waste"], s["batch_size"]["mean"])
common = ["--model", os.path.join(os.path.dirname(__file__), "..", "models", "text_classifier.pt"), "--pattern", "poisson", "--duration", "10",
          "--seq-len", "lognormal:32,1,256", "--max-batch-size", "32", "--max-wait-ms", "10",
          "--target-p99-ms", "50", "--length-buckets", "32,64,128,256"]
res = {}
for rate in sys.argv[3].split(","):
  for pad in sys.argv[4].split(","):
    for seed in (1, 2, 3):
      for who in ("before", "after"):
        r = bench(BIN[who], common + ["--rate", rate, "--padding", pad, "--strategy", "adaptive", "--seed", str(seed)])
        res.setdefault((rate, pad, who), []).append(r)
        print(rate, pad, who, seed, "rps %.1f p50 %.2f p99 %.2f waste %.3f batch %.2f" % r, flush=True)
      if pad == "longest":
        r = bench(BIN["after"], common + ["--rate", rate, "--padding", pad, "--strategy", "fifo", "--seed", str(seed)])
        res.setdefault((rate, pad, "fifo"), []).append(r); print(rate, pad, "fifo", seed, "rps %.1f p50 %.2f p99 %.2f waste %.3f batch %.2f" % r, flush=True)
print("\nmedians [min..max]")
for k, v in res.items():
    cols = list(zip(*v))
    print(k, " ".join("%s %.2f [%.2f..%.2f]" % (n, statistics.median(c), min(c), max(c)) for n, c in zip(("rps","p50","p99","waste","batch"), cols)))
