#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where a tensor model's batch time goes on a GPU, stage by stage.

  cuda_stage_times.py model MODEL.pt [--device cuda:0] [--variant V] [--json OUT]
  cuda_stage_times.py trace TRACE.json [...]

`model` runs a batch as core/torch/torch_model.cpp does, with PyTorch's
LibTorch: inputs stacked into pinned memory, copied to the device without
blocking on the model's own stream, the module called under inference
mode, outputs copied back without blocking, then a wait for the stream.
Each stage is timed on the host (the copy and forward stages are the time
to queue the work; `sync` is the wait for it). After a warm-up over sizes
1, 2, 4, ... (as the engine's), it times:
  - first: every size up to the model's largest, in a shuffled order, the
    first time it runs, then the second time;
  - steady: five more shuffled rounds, each size's median;
  - other thread: every size once more, on a new thread (PyTorch keeps
    cuDNN's plans per thread);
  - idle: batches of 32 after a pause of 0, 2, 20 and 200 ms.
--variant names a setting of the library, each run in a fresh process:
default, no-optimize (TorchScript's graph optimisation off), cudnn-benchmark
(cuDNN times its algorithms per shape), no-texpr (TorchScript's fuser off),
no-cudnn.

`trace` reads `bench --trace-out` files and names the batches that took more
than twice their size's median (and 0.5 ms more): whether their size ran
for the first time in that process, the pause of their lane before them,
and how far into the run they came.
"""
import argparse
import contextlib
import json
import os
import random
import statistics
import sys
import threading
import time


def quantile(v, q):
    v = sorted(v)
    if not v:
        return float("nan")
    return v[min(len(v) - 1, int(q * len(v)))]


def run_model(a):
    import torch

    if a.variant == "no-optimize":
        torch._C._set_graph_executor_optimize(False)
    elif a.variant == "cudnn-benchmark":
        torch.backends.cudnn.benchmark = True
    elif a.variant == "no-texpr":
        torch._C._jit_set_texpr_fuser_enabled(False)
    elif a.variant == "no-cudnn":
        torch.backends.cudnn.enabled = False
    elif a.variant != "default":
        sys.exit(f"unknown --variant '{a.variant}'")
    side = json.load(open(os.path.splitext(a.model)[0] + ".json"))
    spec = side["inputs"][0]
    item = [int(d) for d in spec["shape"][1:]]
    dtype = {"FP32": torch.float32, "INT64": torch.int64, "FP16": torch.float16}[spec["datatype"]]
    top = min(int(side.get("max_batch_size", 128)), a.max_batch)
    dev = torch.device(a.device)
    t0 = time.perf_counter()
    module = torch.jit.load(a.model, map_location=dev)
    module.eval()
    cuda = dev.type == "cuda"  # cpu: a dry run of the script
    if cuda:
        torch.cuda.synchronize(dev)
    load_ms = (time.perf_counter() - t0) * 1e3
    stream = torch.cuda.Stream(device=dev) if cuda else None
    host = torch.zeros([top] + item, dtype=dtype)

    def call(b):
        t = [time.perf_counter()]
        with torch.inference_mode(), torch.cuda.stream(stream) if cuda else contextlib.nullcontext():
            x = torch.empty([b] + item, dtype=dtype, pin_memory=cuda)
            x.copy_(host[:b])
            t.append(time.perf_counter())
            xd = x.to(dev, non_blocking=True)
            t.append(time.perf_counter())
            y = module(xd)
            t.append(time.perf_counter())
            yh = y.to("cpu", non_blocking=True)
            t.append(time.perf_counter())
            if cuda:
                stream.synchronize()
            t.append(time.perf_counter())
            yh.contiguous()
        names = ("stack", "h2d", "forward", "d2h", "sync")
        d = {n: (t[i + 1] - t[i]) * 1e3 for i, n in enumerate(names)}
        d["total"] = (t[-1] - t[0]) * 1e3
        return d

    b = 1
    while True:
        call(b)
        if b == top:
            break
        b = min(2 * b, top)
    rng = random.Random(7)
    order = list(range(1, top + 1))
    rng.shuffle(order)
    first = {b: call(b) for b in order}
    second = {b: call(b) for b in order}
    steady = {b: [] for b in order}
    for _ in range(5):
        rng.shuffle(order)
        for b in order:
            steady[b].append(call(b))
    # Every size again, once, on a thread that has not run the model.
    other = {}

    def on_other_thread():
        for b in order:
            other[b] = call(b)

    th = threading.Thread(target=on_other_thread)
    th.start()
    th.join()
    idle = {}
    for gap_ms, n in ((0, 60), (2, 60), (20, 30), (200, 10)):
        v = []
        for _ in range(n):
            if gap_ms:
                time.sleep(gap_ms / 1e3)
            v.append(call(min(32, top))["total"])
        idle[gap_ms] = v
    med = {b: statistics.median(r["total"] for r in steady[b]) for b in steady}
    out = {
        "model": os.path.basename(a.model),
        "device": a.device,
        "variant": a.variant,
        "torch": torch.__version__,
        "cudnn": torch.backends.cudnn.version(),
        "gpu": torch.cuda.get_device_name(dev) if cuda else "cpu",
        "load_ms": load_ms,
        "sizes": {
            str(b): {
                "first": first[b],
                "second": second[b],
                "other_thread": other[b],
                "steady_ms": med[b],
                "steady_stages": {
                    k: statistics.median(r[k] for r in steady[b]) for k in first[b]
                },
            }
            for b in sorted(steady)
        },
        "idle": {str(g): {"median_ms": statistics.median(v), "max_ms": max(v)} for g, v in idle.items()},
    }
    if a.json:
        json.dump(out, open(a.json, "w"), indent=1)
    report(out)


def report(o):
    sizes = o["sizes"]
    bs = sorted(int(b) for b in sizes)

    def ratio(kind):
        return [sizes[str(b)][kind]["total"] / sizes[str(b)]["steady_ms"] for b in bs]

    fr, sr, tr = ratio("first"), ratio("second"), ratio("other_thread")
    slow_first = [b for b, r in zip(bs, fr) if r > 2]
    print(f"{o['model']} on {o['gpu']} ({o['device']}), variant {o['variant']}: "
          f"PyTorch {o['torch']}, cuDNN {o['cudnn']}, load {o['load_ms']:.0f} ms")
    print(f"  first call of a size / its steady median: median {statistics.median(fr):.2f}, "
          f"max {max(fr):.1f}; above 2x at {len(slow_first)} of {len(bs)} sizes"
          + (f" (e.g. {slow_first[:8]})" if slow_first else ""))
    print(f"  second call / steady: median {statistics.median(sr):.2f}, max {max(sr):.1f}")
    print(f"  first call on another thread / steady: median {statistics.median(tr):.2f}, "
          f"max {max(tr):.1f}; above 2x at {sum(r > 2 for r in tr)} of {len(bs)} sizes")
    if slow_first:
        worst = max(slow_first, key=lambda b: sizes[str(b)]["first"]["total"])
        f = sizes[str(worst)]["first"]
        print("  worst first call, b=%d: %s" % (worst, ", ".join(f"{k} {v:.2f}" for k, v in f.items())))
    st = [sizes[str(b)]["steady_ms"] for b in bs]
    spikes = [b for i, b in enumerate(bs[1:-1], 1) if st[i] > 1.5 * max(st[i - 1], st[i + 1])]
    print("  steady ms at b=1,8,32,64,128: " + ", ".join(
        f"{sizes[str(b)]['steady_ms']:.3f}" for b in (1, 8, 32, 64, 128) if str(b) in sizes)
        + f"; sizes 1.5x above both neighbours: {spikes[:12] or 'none'}")
    s128 = sizes[str(bs[-1])]["steady_stages"]
    print(f"  steady stages at b={bs[-1]}: " + ", ".join(f"{k} {v:.3f}" for k, v in s128.items()))
    print("  b=32 (or the largest) after a pause: " + ", ".join(
        f"{g} ms: median {v['median_ms']:.3f} max {v['max_ms']:.3f}" for g, v in o["idle"].items()))


def run_trace(a):
    for path in a.traces:
        ev = [e for e in json.load(open(path))["traceEvents"]
              if e.get("ph") == "X" and e.get("cat", e.get("name", "")).startswith("batch")
              and "size" in e.get("args", {})]
        if not ev:
            print(f"{path}: no batches")
            continue
        ev.sort(key=lambda e: e["ts"])
        by_size = {}
        for e in ev:
            by_size.setdefault(e["args"]["size"], []).append(e["dur"])
        med = {b: statistics.median(v) for b, v in by_size.items()}
        t0, t1 = ev[0]["ts"], ev[-1]["ts"] + ev[-1]["dur"]
        seen, lane_end = set(), {}
        slow = []
        for e in ev:
            b, lane = e["args"]["size"], e["tid"]
            gap = e["ts"] - lane_end.get(lane, e["ts"])
            new = b not in seen
            seen.add(b)
            lane_end[lane] = e["ts"] + e["dur"]
            if e["dur"] > 2 * med[b] and e["dur"] - med[b] > 500:
                slow.append((e, new, gap, (e["ts"] - t0) / max(1, t1 - t0)))
        durs = [e["dur"] for e in ev]
        print(f"{os.path.basename(path)}: {len(ev)} batches, {len(by_size)} sizes, run time "
              f"p50 {quantile(durs, .5) / 1e3:.3f} ms p99 {quantile(durs, .99) / 1e3:.3f} ms "
              f"max {max(durs) / 1e3:.2f} ms; {len(slow)} above 2x their size's median")
        if slow:
            n = len(slow)
            print(f"  of those: first of their size {sum(s[1] for s in slow)}, "
                  f"after a lane pause > 5 ms {sum(s[2] > 5000 for s in slow)}, "
                  f"in the first 10% of the run {sum(s[3] < .1 for s in slow)}; "
                  f"median excess {statistics.median(s[0]['dur'] - med[s[0]['args']['size']] for s in slow) / 1e3:.2f} ms")
            for e, new, gap, at in sorted(slow, key=lambda s: -s[0]["dur"])[:5]:
                b = e["args"]["size"]
                print(f"    b={b} {e['dur'] / 1e3:.2f} ms (median {med[b] / 1e3:.3f}), "
                      f"{'first' if new else 'seen'}, lane pause {gap / 1e3:.1f} ms, at {100 * at:.0f}%")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("model")
    m.add_argument("model")
    m.add_argument("--device", default="cuda:0")
    m.add_argument("--variant", default="default")
    m.add_argument("--max-batch", type=int, default=128)
    m.add_argument("--json")
    t = sub.add_parser("trace")
    t.add_argument("traces", nargs="+")
    a = p.parse_args()
    run_model(a) if a.cmd == "model" else run_trace(a)


if __name__ == "__main__":
    main()
