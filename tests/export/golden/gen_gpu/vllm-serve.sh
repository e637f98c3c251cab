#!/bin/sh
# vLLM with Batchscope's options, exported from Batchscope.
# Use with: MODEL=org/name sh vllm-serve.sh [more vllm serve flags].
#
# Batchscope options in force: scheduling=continuous max_num_seqs=48
# max_num_batched_tokens=768 queue_capacity=512 request_timeout_ms=60000.
# Model tiny_lm on cuda:0: a context of 1024 tokens, a cache of 1024 blocks of 16 (16384
# tokens).
# Tuned under traffic: poisson 20 req/s, prompts uniform 16..64, max_tokens lognormal 32.
#
# Not exact: the cache. vLLM sizes its cache from gpu-memory-utilization (default 0.9) of
# the GPU; Batchscope ran with 1024 blocks of 16 tokens (16384 tokens). Uncomment
# num-gpu-blocks-override below (or add --num-gpu-blocks-override 1024) to hold vLLM's at
# that, for a comparison only.
# Not exact: lengths. Batchscope counts the model's own tokens (tiny_lm's); a model with
# another tokenizer gives another count for the same text, so the token budgets and
# context below are for the model Batchscope ran.
# Not expressible: queue_capacity = 512 and request_timeout_ms = 60000. vLLM has no
# request timeout of its own and no queue bound.
# The same: a prompt longer than the token budget is prefilled in chunks beside the
# decodes (enable-chunked-prefill), and when the cache is full the newest sequence is
# preempted and recomputed.
exec vllm serve "${MODEL:?set MODEL to the model to serve}" \
  --max-num-seqs 48 \
  --max-num-batched-tokens 768 \
  --enable-chunked-prefill \
  --scheduling-policy fcfs \
  --max-model-len 1024 \
  --block-size 16 \
  "$@"
