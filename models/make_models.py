#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes Batchscope's TorchScript models and their JSON sidecars.

Run with Debian's python3-torch (apt-get install python3-torch):
    /usr/bin/python3 models/make_models.py
Seeds are fixed, so the files are the same on every run of the same torch.
Also writes the small models the torch tests use into tests/torch/data/.
"""

import json
import os
from typing import Dict, Tuple

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
TEST_DATA = os.path.join(HERE, "..", "tests", "torch", "data")


def spec(name, shape, datatype="FP32", finite_only=None, max_shape=None, value_range=None):
    """shape without the batch dimension; -1 where it varies, max_shape its largest."""
    s = {"name": name, "datatype": datatype, "shape": [-1] + list(shape)}
    if max_shape is not None:
        s["max_shape"] = [-1] + list(max_shape)
    if value_range is not None:
        s["range"] = list(value_range)
    if finite_only is not None:
        s["finite_only"] = finite_only
    return s


def save(module, folder, name, description, inputs, outputs, max_batch_size):
    module.eval()
    scripted = torch.jit.script(module)
    os.makedirs(folder, exist_ok=True)
    scripted.save(os.path.join(folder, name + ".pt"))
    meta = {
        "name": name,
        "description": description,
        "max_batch_size": max_batch_size,
        "inputs": inputs,
        "outputs": outputs,
    }
    with open(os.path.join(folder, name + ".json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    print("wrote", os.path.relpath(os.path.join(folder, name + ".pt")))


class Mlp(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        layers = []
        for i in range(len(sizes) - 1):
            layers.append(nn.Linear(sizes[i], sizes[i + 1]))
            if i + 2 < len(sizes):
                layers.append(nn.ReLU())
        self.net = nn.Sequential(*layers)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.net(features)


class CnnMnist(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3)
        self.conv2 = nn.Conv2d(16, 32, 3)
        self.fc1 = nn.Linear(32 * 5 * 5, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        x = torch.max_pool2d(torch.relu(self.conv1(image)), 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)


class TupleOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        y = self.lin(x)
        return y, y.sum(dim=1, keepdim=True)


class DictOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> Dict[str, torch.Tensor]:
        y = self.lin(x) * scale
        return {"total": y.sum(dim=1, keepdim=True), "scaled": y}


class ThrowsOnNegative(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if bool((x < 0).any()):
            raise RuntimeError("negative input")
        return self.lin(x)


class EncoderLayer(nn.Module):
    """Self-attention that ignores padded positions, then a feed-forward block."""

    def __init__(self, dim: int, heads: int, hidden: int):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm1 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, dim))
        self.norm2 = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
        a, _ = self.attn(x, x, x, key_padding_mask=padding, need_weights=False)
        x = self.norm1(x + a)
        return self.norm2(x + self.ff(x))


class TextClassifier(nn.Module):
    """Token ids of any length up to 256 -> 2 logits: embedding, 2 encoder
    layers, the mean over the real (unmasked) tokens, a linear head."""

    def __init__(self, vocab: int = 1000, dim: int = 64, max_len: int = 256):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(max_len, dim)
        self.layers = nn.ModuleList([EncoderLayer(dim, 4, 128) for _ in range(2)])
        self.head = nn.Linear(dim, 2)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.size(1), device=input_ids.device).unsqueeze(0)
        x = self.embed(input_ids) + self.position(positions)
        padding = attention_mask == 0
        for layer in self.layers:
            x = layer(x, padding)
        keep = attention_mask.unsqueeze(-1).to(x.dtype)
        pooled = (x * keep).sum(1) / keep.sum(1).clamp(min=1.0)
        return self.head(pooled)


class Ragged(nn.Module):
    """Test model for padding: per-position outputs and a sum over positions,
    both exact whatever the padding (padding adds zeros)."""

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return x * 2.0 + mask, (x * mask).sum(1, keepdim=True)


def main():
    torch.manual_seed(0)
    save(nn.Sequential(nn.Linear(128, 64)), HERE, "linear_128x64",
         "One Linear(128 -> 64) layer: the reference model of a widely shared Python "
         "batching engine, for side-by-side comparisons.",
         [spec("data", [128], finite_only=True)], [spec("output", [64])], 256)

    torch.manual_seed(1)
    save(Mlp([512, 1024, 1024, 1024, 16]), HERE, "mlp",
         "A multilayer perceptron, 512 -> 1024 -> 1024 -> 1024 -> 16 with ReLU: "
         "memory-bound one at a time, compute-bound in batches, so batching pays.",
         [spec("features", [512], finite_only=True)], [spec("logits", [16])], 128)

    torch.manual_seed(2)
    save(CnnMnist(), HERE, "cnn_mnist",
         "A small convolutional classifier of 1x28x28 images into 10 classes "
         "(untrained weights).",
         [spec("image", [1, 28, 28], finite_only=True)], [spec("logits", [10])], 128)

    torch.manual_seed(6)
    save(TextClassifier(), HERE, "text_classifier",
         "A small transformer encoder over token ids of any length up to 256 (embedding, "
         "2 layers, mean over the unmasked tokens, 2 classes; random weights).",
         [spec("input_ids", [-1], "INT64", max_shape=[256], value_range=[1, 999]),
          spec("attention_mask", [-1], "INT64", max_shape=[256], value_range=[1, 1])],
         [spec("logits", [2])], 64)

    torch.manual_seed(3)
    save(TupleOut(), TEST_DATA, "tuple_out", "Test model: a tuple of two outputs.",
         [spec("x", [8])], [spec("y", [4]), spec("sum", [1])], 16)
    torch.manual_seed(4)
    save(DictOut(), TEST_DATA, "dict_out", "Test model: two inputs, a dict of outputs.",
         [spec("x", [8]), spec("scale", [1])], [spec("scaled", [4]), spec("total", [1])], 16)
    torch.manual_seed(5)
    save(ThrowsOnNegative(), TEST_DATA, "throws_on_negative",
         "Test model: raises when any input is negative.",
         [spec("x", [4])], [spec("y", [2])], 16)
    save(Ragged(), TEST_DATA, "ragged",
         "Test model: a variable length up to 32; per-position outputs and a sum.",
         [spec("x", [-1], max_shape=[32]), spec("mask", [-1], max_shape=[32])],
         [spec("doubled", [-1]), spec("total", [1])], 16)



# --- tiny_lm: a small generative model over bytes, trained on the KJV Bible ---
#
#     /usr/bin/python3 models/make_models.py --lm
# trains the generative model tiny_lm (models/tiny_lm.pt and .json) instead of
# writing the small models: a small transformer over bytes, trained on the King
# James Bible that the `bible` program prints (apt-get install bible-kjv
# bible-kjv-text), in about 15 minutes on 2 cores. It runs apart from the
# small models so that remaking those never retrains it.
#
#     /usr/bin/python3 models/make_models.py --lm-rescript
# rewrites models/tiny_lm.pt from the weights it holds with this file's
# prefill() and decode(), for a change to them that needs no retraining.
#
# Everything here sits below the small models' code, imports included:
# TorchScript files record the source line of each scripted method, so a line
# added above them would change their bytes.

import argparse  # noqa: E402
import ctypes  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

LM_SEED = 7
# Training: LM_STEPS steps of LM_TOKENS_PER_STEP tokens. Most run on windows
# of LM_SHORT tokens (cheap attention); the last twelfth on full 1024-token
# windows, so that attention over the whole context is trained too.
LM_STEPS = 400
LM_TOKENS_PER_STEP = 4096
LM_SHORT = 256
LM_LR = 3e-3
LM_BLOCK = 16  # token positions per key/value cache block
EOS = 256
VOCAB = 257


def read_verses():
    """The King James Bible as verses, in order, from the `bible` program.

    Returns a list of (chapter index, verse text). Chapter headings ("Genesis 1")
    and verse numbers are dropped; wrapped lines are joined with a space.
    """
    import shutil
    import subprocess
    import sys
    if shutil.which("bible") is None:
        sys.exit("make_models.py --lm needs the `bible` program and its text: "
                 "apt-get install bible-kjv bible-kjv-text")
    text = subprocess.run(["bible", "gen1:1-rev22:21"], check=True,
                          capture_output=True).stdout.decode("ascii")
    verses = []
    chapter = -1
    current = None
    previous_blank = True
    for line in text.split("\n"):
        if not line.strip():
            previous_blank = True
            continue
        if line.startswith("  "):
            if current is not None:
                verses.append((chapter, current))
            current = line.strip().split(" ", 1)[1]
        elif previous_blank:  # a chapter heading
            if current is not None:
                verses.append((chapter, current))
            current = None
            chapter += 1
        else:  # a wrapped verse goes on
            current += " " + line.strip()
        previous_blank = False
    if current is not None:
        verses.append((chapter, current))
    return verses


def token_stream(verses):
    """Each verse's bytes, then the end-of-sequence token, as one int64 tensor,
    and the offsets where the verses start."""
    tokens = []
    starts = []
    for text in verses:
        starts.append(len(tokens))
        tokens.extend(text.encode("ascii"))
        tokens.append(EOS)
    return torch.tensor(tokens, dtype=torch.int64), torch.tensor(starts, dtype=torch.int64)


class TinyLmLayer(nn.Module):
    def __init__(self, d_model: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.head_dim = d_model // n_head
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.act = nn.GELU()
        self.out = nn.Linear(4 * d_model, d_model)

    def mlp(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.out(self.act(self.fc(self.ln2(x))))

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        """Training: x [B, T, C]; bias [H, T, T] is the causal ALiBi bias."""
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.n_head, self.head_dim).unbind(2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (self.head_dim ** -0.5) + bias
        y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c)
        return self.mlp(x + self.proj(y))

    def step(self, x: torch.Tensor, layer: int, slot_block: torch.Tensor,
             slot_offset: torch.Tensor, bias: torch.Tensor, rows: torch.Tensor,
             k_cache: torch.Tensor, v_cache: torch.Tensor) -> torch.Tensor:
        """Inference over the paged cache. x [B, T, C]: row b's T tokens;
        their keys and values go to blocks slot_block and offsets slot_offset
        ([B, T]). Attention reads the (block, head) rows `rows` of the
        layer's cache seen as [num_blocks * H, block_size, head_dim], ordered
        so that one gather yields [B, H, S, head_dim] without a transpose,
        with bias [B, H, T, S] (ALiBi, and -inf after each query)."""
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.n_head, self.head_dim).unbind(2)
        heads = torch.arange(self.n_head, device=x.device).view(1, 1, self.n_head)
        blk = slot_block.unsqueeze(2)
        off = slot_offset.unsqueeze(2)
        k_cache[layer][blk, heads, off] = k
        v_cache[layer][blk, heads, off] = v
        block = k_cache.size(3)
        keys = k_cache[layer].view(-1, block, self.head_dim).index_select(0, rows)
        keys = keys.view(b, self.n_head, -1, self.head_dim)
        values = v_cache[layer].view(-1, block, self.head_dim).index_select(0, rows)
        values = values.view(b, self.n_head, -1, self.head_dim)
        scores = (q.transpose(1, 2) @ keys.transpose(-2, -1)) * (self.head_dim ** -0.5) + bias
        y = (scores.softmax(-1) @ values).transpose(1, 2).reshape(b, t, c)
        return self.mlp(x + self.proj(y))


class TinyLm(nn.Module):
    """A decoder-only transformer over bytes (token 256 ends a sequence).

    forward() is for training. prefill() and decode() run inference over a
    paged key/value cache that the caller allocates, zero-filled, as
    [n_layer, num_blocks, n_head, block_size, head_dim] floats for keys and
    the same for values; position p of a sequence lives in block
    table[p // block_size] at offset p % block_size.
    """

    def __init__(self, n_layer: int, d_model: int, n_head: int, context: int):
        super().__init__()
        self.n_layer = n_layer
        self.n_head = n_head
        self.head_dim = d_model // n_head
        self.context = context
        self.block_size = LM_BLOCK
        self.tok = nn.Embedding(VOCAB, d_model)
        # ALiBi (Press et al., 2022): head h adds -slope[h] * distance to its
        # attention scores; no position embeddings, so no position goes untrained.
        slopes = [2.0 ** (-8.0 * (h + 1) / n_head) for h in range(n_head)]
        self.register_buffer("slopes", torch.tensor(slopes).view(n_head, 1, 1))
        self.layers = nn.ModuleList([TinyLmLayer(d_model, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d_model)
        for name, p in self.named_parameters():
            if name.endswith("weight") and p.dim() == 2:
                std = 0.02 / (2 * n_layer) ** 0.5 if name.endswith(("proj.weight", "out.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def head(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln_f(x) @ self.tok.weight.t()  # tied with the token embedding

    def bias(self, query_pos: torch.Tensor, key_pos: torch.Tensor) -> torch.Tensor:
        """ALiBi biases [..., H, Tq, Tk] for queries and keys at these
        positions, -inf where the key comes after the query."""
        distance = (query_pos.unsqueeze(-1) - key_pos).unsqueeze(-3).float()
        bias = -self.slopes * distance
        return bias.masked_fill(distance < 0, float("-inf"))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        t = tokens.size(1)
        pos = torch.arange(t, device=tokens.device)
        bias = self.bias(pos, pos)
        x = self.tok(tokens)
        for layer in self.layers:
            x = layer(x, bias)
        return self.head(x)

    def run_cache(self, x: torch.Tensor, positions: torch.Tensor, slot_block: torch.Tensor,
                  tables: torch.Tensor, k_cache: torch.Tensor,
                  v_cache: torch.Tensor) -> torch.Tensor:
        offsets = positions % self.block_size
        key_pos = torch.arange(tables.size(1) * self.block_size, device=x.device)
        bias = self.bias(positions, key_pos)
        # Cache rows (block, head) in the order [B, H, nb]: block * H + head.
        heads = torch.arange(self.n_head, device=x.device).view(1, self.n_head, 1)
        rows = (tables.unsqueeze(1) * self.n_head + heads).reshape(-1)
        i = 0
        for layer in self.layers:
            x = layer.step(x, i, slot_block, offsets, bias, rows, k_cache, v_cache)
            i += 1
        return x

    @torch.jit.export
    def prefill(self, tokens: torch.Tensor, start: int, blocks: torch.Tensor,
                k_cache: torch.Tensor, v_cache: torch.Tensor,
                want_logits: bool) -> torch.Tensor:
        """tokens [T] at positions start .. start + T - 1 of one sequence whose
        block table is blocks [nb]: writes their keys and values, attends to
        every earlier position, and returns the logits [V] after the last
        (an empty tensor unless want_logits)."""
        t = tokens.size(0)
        positions = torch.arange(start, start + t, device=tokens.device).view(1, t)
        used = (start + t + self.block_size - 1) // self.block_size
        table = blocks[:used].view(1, used)
        slot_block = blocks.index_select(0, positions.view(-1) // self.block_size).view(1, t)
        x = self.tok(tokens).view(1, t, -1)
        x = self.run_cache(x, positions, slot_block, table, k_cache, v_cache)
        if not want_logits:
            return torch.empty(0, device=tokens.device)
        return self.head(x[0, t - 1])

    @torch.jit.export
    def decode(self, tokens: torch.Tensor, positions: torch.Tensor, block_tables: torch.Tensor,
               k_cache: torch.Tensor, v_cache: torch.Tensor) -> torch.Tensor:
        """tokens [B] at positions [B] of B sequences with block tables
        [B, nbmax] (rows padded with any valid block id): writes their keys
        and values, attends to positions 0 .. positions[b], and returns the
        next-token logits [B, V]. Reads only the blocks the longest row uses."""
        b = tokens.size(0)
        used = (int(positions.max()) + self.block_size) // self.block_size
        tables = block_tables[:, :used]
        slot_block = tables.gather(1, (positions // self.block_size).view(b, 1))
        x = self.tok(tokens).view(b, 1, -1)
        x = self.run_cache(x, positions.view(b, 1), slot_block, tables, k_cache, v_cache)
        return self.head(x.view(b, -1))


def lm_config():
    return {"n_layer": 4, "d_model": 160, "n_head": 4, "context": 1024}


def heldout_chapter(chapter):
    return chapter % 50 == 49  # every 50th chapter is kept for evaluation


def lm_batch(stream, starts, batch, length, gen):
    """`batch` windows of `length` + 1 tokens, each starting at a verse."""
    fits = starts[starts + length + 1 <= stream.numel()]
    pick = fits[torch.randint(fits.numel(), (batch,), generator=gen)]
    rows = torch.stack([stream[s:s + length + 1] for s in pick.tolist()])
    return rows[:, :-1], rows[:, 1:]


def lm_bits(model, stream, length):
    """Bits per predicted token over `stream`, in windows of `length`."""
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for s in range(0, stream.numel() - 1, length):
            piece = stream[s:s + length + 1]
            if piece.numel() < 2:
                break
            logits = model(piece[:-1].view(1, -1))
            loss = nn.functional.cross_entropy(logits.view(-1, VOCAB), piece[1:], reduction="sum")
            total += float(loss)
            count += piece.numel() - 1
    model.train()
    return total / count / math.log(2)


def train_lm(steps, log_every=10):
    """Trains tiny_lm; returns the model, its held-out bits and the wall time."""
    torch.manual_seed(LM_SEED)
    verses = read_verses()
    train = [text for chapter, text in verses if not heldout_chapter(chapter)]
    held = [text for chapter, text in verses if heldout_chapter(chapter)]
    stream, starts = token_stream(train)
    held_stream, _ = token_stream(held)
    print(f"{len(verses)} verses: {stream.numel()} training tokens, "
          f"{held_stream.numel()} held out", flush=True)
    cfg = lm_config()
    model = TinyLm(**cfg)
    decay = [p for p in model.parameters() if p.dim() == 2]
    other = [p for p in model.parameters() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": other, "weight_decay": 0.0}],
                            lr=LM_LR, betas=(0.9, 0.95))
    warmup = max(1, steps // 20)

    def rate(step):
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, steps - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, rate)
    gen = torch.Generator().manual_seed(LM_SEED)
    began = time.time()
    for step in range(steps):
        length = LM_SHORT if step < steps - steps // 12 else cfg["context"]
        x, y = lm_batch(stream, starts, LM_TOKENS_PER_STEP // length, length, gen)
        loss = nn.functional.cross_entropy(model(x).view(-1, VOCAB), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % log_every == 0 or step == steps - 1:
            print(f"step {step} length {length} loss {float(loss) / math.log(2):.3f} bits "
                  f"{time.time() - began:.0f} s", flush=True)
    seconds = time.time() - began
    model.eval()
    # Bits per character: the held-out text's total cost, verse ends included,
    # over its bytes.
    bits_per_token = lm_bits(model, held_stream, cfg["context"])
    bytes_held = held_stream.numel() - len(held)
    bits_per_char = bits_per_token * (held_stream.numel() - 1) / bytes_held
    return model, bits_per_char, seconds


def greedy(module, prompt, max_new, cfg=None):
    """Greedy completion through the scripted cache interface (of a model of
    lm_config() unless cfg gives another)."""
    cfg = cfg or lm_config()
    head_dim = cfg["d_model"] // cfg["n_head"]
    blocks = (len(prompt) + max_new + LM_BLOCK) // LM_BLOCK
    shape = [cfg["n_layer"], blocks, cfg["n_head"], LM_BLOCK, head_dim]
    k_cache, v_cache = torch.zeros(shape), torch.zeros(shape)
    table = torch.arange(blocks)
    tokens = torch.tensor(list(prompt.encode("ascii")))
    with torch.no_grad():
        logits = module.prefill(tokens, 0, table, k_cache, v_cache, True)
        out = []
        pos = tokens.numel()
        for _ in range(max_new):
            t = int(logits.argmax())
            if t == EOS:
                break
            out.append(t)
            logits = module.decode(torch.tensor([t]), torch.tensor([pos]), table.view(1, -1),
                                   k_cache, v_cache)[0]
            pos += 1
    return prompt + bytes(out).decode("ascii", errors="replace")


def make_lm(steps):
    # One thread, for LibTorch and for OpenBLAS: on 2 shared cores, OpenMP's
    # second thread waited at every barrier whenever another process held a
    # core (3.8x slower per step), and gained little even on idle cores.
    torch.set_num_threads(1)
    try:
        ctypes.CDLL("libblas.so.3").openblas_set_num_threads(1)
    except (OSError, AttributeError):
        pass  # not OpenBLAS
    model, bits, seconds = train_lm(steps)
    scripted = torch.jit.script(model)
    path = os.path.join(HERE, "tiny_lm.pt")
    scripted.save(path)
    sample = greedy(torch.jit.load(path), "And God said", 200)
    cfg = lm_config()
    params = sum(p.numel() for p in model.parameters())
    meta = {
        "name": "tiny_lm",
        "kind": "generative",
        "description": (
            f"A {cfg['n_layer']}-layer decoder-only transformer over bytes "
            f"(d_model {cfg['d_model']}, {cfg['n_head']} heads, ALiBi positions), trained on "
            "the King James Bible one verse per sequence; token 256 ends a verse."),
        "tokenizer": "bytes",
        "vocab_size": VOCAB,
        "eos_token": EOS,
        "context_length": cfg["context"],
        "kv_cache": {"layout": "paged", "block_size": LM_BLOCK, "layers": cfg["n_layer"],
                     "heads": cfg["n_head"], "head_dim": cfg["d_model"] // cfg["n_head"],
                     "dtype": "float32"},
        "parameters": params,
        "training": {
            "text": "King James Bible (public domain), Debian packages bible-kjv-text "
                    "and bible-kjv",
            "heldout": "every 50th chapter",
            "heldout_bits_per_char": round(bits, 3),
            "seed": LM_SEED,
            "steps": steps,
            "tokens_per_step": LM_TOKENS_PER_STEP,
            "window": f"{LM_SHORT} tokens, {cfg['context']} for the last "
                      f"{steps // 12} steps",
            "learning_rate": LM_LR,
            "seconds": round(seconds),
        },
    }
    with open(os.path.join(HERE, "tiny_lm.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    print(f"wrote models/tiny_lm.pt: {params} parameters, {seconds:.0f} s of training, "
          f"held-out {bits:.3f} bits per character")
    print("greedy sample:", repr(sample))


def rescript_lm():
    """Writes models/tiny_lm.pt again from the weights it holds, with this
    file's inference code: for a change to prefill() or decode() that needs
    no retraining. The sidecar stays as it is."""
    torch.set_num_threads(1)
    path = os.path.join(HERE, "tiny_lm.pt")
    old = torch.jit.load(path)
    model = TinyLm(**lm_config())
    model.load_state_dict(old.state_dict())
    model.eval()
    before = greedy(old, "And God said", 200)
    torch.jit.script(model).save(path)
    after = greedy(torch.jit.load(path), "And God said", 200)
    if after != before:
        raise SystemExit(f"the new code changes the greedy sample: {before!r} -> {after!r}")
    print("rewrote models/tiny_lm.pt; greedy sample unchanged:", repr(after))


# --- wide_lm: tiny_lm's architecture, wide and untrained, for throughput ---
#
#     python3 models/make_models.py --wide-lm [--out-dir DIR]
# writes DIR/wide_lm.pt and DIR/wide_lm.json (DIR defaults to models/): the
# TinyLm above with 4 layers of d_model 2048 (16 heads of 128), about 202
# million float32 parameters (808 MB), random weights from a fixed seed. Its
# text is noise; it exists so that a decode step on a GPU reads hundreds of
# megabytes of weights, for measuring continuous against static batching.
# The file is too large to ship (.gitignore keeps it out of git): make it on
# the machine that measures. Tried with Debian's torch 1.13; it uses nothing
# that PyTorch 2.x lacks (torch.jit.script is deprecated there, not gone).

WIDE_LM_SEED = 11
WIDE_LM_LAYERS = 4
WIDE_LM_DIM = 2048
WIDE_LM_HEAD_DIM = 128
# Cache positions for 32 sequences of up to 640 positions each (prompt up to
# 64 + max_tokens up to 512 = 576, rounded up): pass it as --cache-tokens.
# The runner's default (16384) holds 32 sequences of 512 positions.
WIDE_LM_CACHE_TOKENS = 32 * 640


def wide_lm_config(n_layer, d_model):
    if d_model % WIDE_LM_HEAD_DIM != 0:
        raise SystemExit(f"--wide-lm-dim must be a multiple of {WIDE_LM_HEAD_DIM}, got {d_model}")
    return {"n_layer": n_layer, "d_model": d_model, "n_head": d_model // WIDE_LM_HEAD_DIM,
            "context": 1024}


def make_wide_lm(out_dir, n_layer, d_model):
    began = time.time()
    cfg = wide_lm_config(n_layer, d_model)
    torch.manual_seed(WIDE_LM_SEED)
    with torch.no_grad():
        # TinyLm initialises its own weights (normal, std 0.02, the residual
        # projections scaled down by sqrt(2 * layers), biases zero), in place,
        # one call per tensor: a few seconds for 200 million parameters.
        model = TinyLm(**cfg)
    model.eval()
    params = sum(p.numel() for p in model.parameters())
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "wide_lm.pt")
    torch.jit.script(model).save(path)
    made = time.time() - began

    # Check what the runner will call: a prefill, decodes; finite logits.
    loaded = torch.jit.load(path)
    sample = greedy(loaded, "And God said", 8, cfg)
    head_dim = cfg["d_model"] // cfg["n_head"]
    shape = [cfg["n_layer"], 4, cfg["n_head"], LM_BLOCK, head_dim]
    k_cache, v_cache = torch.zeros(shape), torch.zeros(shape)
    with torch.no_grad():
        logits = loaded.decode(torch.tensor([65, 66]), torch.tensor([0, 5]),
                               torch.tensor([[0], [1]]), k_cache, v_cache)
    if not bool(torch.isfinite(logits).all()):
        raise SystemExit("wide_lm's logits are not finite")
    file_bytes = os.path.getsize(path)
    # Keys and values: 2 x layers x d_model float32 per position.
    cache_bytes_per_token = 2 * cfg["n_layer"] * cfg["d_model"] * 4
    meta = {
        "name": "wide_lm",
        "kind": "generative",
        "description": (
            f"A {cfg['n_layer']}-layer decoder-only transformer over bytes "
            f"(d_model {cfg['d_model']}, {cfg['n_head']} heads of {head_dim}, ALiBi positions), "
            "tiny_lm's architecture made wide so that a decode step reads "
            f"{params * 4 / 1e6:.0f} MB of weights: random weights, for throughput "
            "measurement only; its text is noise."),
        "tokenizer": "bytes",
        "vocab_size": VOCAB,
        "eos_token": EOS,
        "context_length": cfg["context"],
        "kv_cache": {"layout": "paged", "block_size": LM_BLOCK, "layers": cfg["n_layer"],
                     "heads": cfg["n_head"], "head_dim": head_dim, "dtype": "float32"},
        "parameters": params,
        "weights": {
            "trained": False,
            "init": "normal, std 0.02 (proj and out 0.02 / sqrt(2 x layers)); biases 0; "
                    "LayerNorm weight 1, bias 0; output head tied to the token embedding",
            "seed": WIDE_LM_SEED,
            "torch": torch.__version__,
            "file_bytes": file_bytes,
        },
        "cache_sizing": {
            "bytes_per_token": cache_bytes_per_token,
            "suggested_cache_tokens": WIDE_LM_CACHE_TOKENS,
            "suggested_cache_bytes": cache_bytes_per_token * WIDE_LM_CACHE_TOKENS,
            "note": "32 sequences of up to 640 positions (prompt up to 64 + max_tokens up to "
                    "512); pass --cache-tokens, the runner does not read this field",
        },
    }
    with open(os.path.join(out_dir, "wide_lm.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    print(f"wrote {path}: {params:,} parameters, {file_bytes / 1e6:.0f} MB, "
          f"{made:.1f} s to make (torch {torch.__version__}); a cache of "
          f"{WIDE_LM_CACHE_TOKENS} positions takes "
          f"{cache_bytes_per_token * WIDE_LM_CACHE_TOKENS / 2 ** 30:.2f} GiB")
    print("greedy sample (noise):", repr(sample))
    print(f"total {time.time() - began:.1f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lm", action="store_true",
                        help="train and write models/tiny_lm.pt instead of the small models "
                             "(about 15 minutes on 2 cores)")
    parser.add_argument("--lm-steps", type=int, default=LM_STEPS,
                        help=f"training steps with --lm (default {LM_STEPS})")
    parser.add_argument("--lm-rescript", action="store_true",
                        help="rewrite models/tiny_lm.pt with this file's inference code and "
                             "the weights it holds, without training")
    parser.add_argument("--wide-lm", action="store_true",
                        help="write wide_lm.pt and .json: tiny_lm's architecture with "
                             f"{WIDE_LM_LAYERS} layers of d_model {WIDE_LM_DIM}, random weights, "
                             "for throughput measurement (about 10 s, 808 MB)")
    parser.add_argument("--out-dir", default=HERE,
                        help="folder for --wide-lm's files (default: models/)")
    parser.add_argument("--wide-lm-layers", type=int, default=WIDE_LM_LAYERS,
                        help=f"layers with --wide-lm (default {WIDE_LM_LAYERS})")
    parser.add_argument("--wide-lm-dim", type=int, default=WIDE_LM_DIM,
                        help=f"d_model with --wide-lm, a multiple of {WIDE_LM_HEAD_DIM} "
                             f"(default {WIDE_LM_DIM})")
    args = parser.parse_args()
    if args.wide_lm:
        make_wide_lm(args.out_dir, args.wide_lm_layers, args.wide_lm_dim)
    elif args.lm_rescript:
        rescript_lm()
    elif args.lm:
        make_lm(args.lm_steps)
    else:
        main()
