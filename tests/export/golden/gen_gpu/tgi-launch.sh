#!/bin/sh
# TGI with Batchscope's options, exported from Batchscope.
# Use with: MODEL_ID=org/name sh tgi-launch.sh [more launcher flags].
#
# Batchscope options in force: scheduling=continuous max_num_seqs=48
# max_num_batched_tokens=768 queue_capacity=512 request_timeout_ms=60000.
# Model tiny_lm on cuda:0: a context of 1024 tokens, a cache of 1024 blocks of 16 (16384
# tokens).
# Tuned under traffic: poisson 20 req/s, prompts uniform 16..64, max_tokens lognormal 32.
#
# Not exact: when waiting requests join. Batchscope adds them at every step, their prompts
# in chunks beside the decodes; TGI prefills them in a pass of their own.
# waiting-served-ratio 0 and max-waiting-tokens 1 make it take them at the next token, as
# Batchscope does.
# Not exact: max-concurrent-requests counts the running and the waiting: max_num_seqs 48 +
# queue_capacity 512 = 560.
# The cache: max-batch-total-tokens is Batchscope's cache, 16384 tokens; TGI infers it
# from the GPU's memory when left out.
# Not exact: prompts are capped at max-input-tokens 768, the token budget, as TGI prefills
# a prompt in one pass within max-batch-prefill-tokens; Batchscope prefills longer prompts
# (up to 1023 tokens) in chunks.
# Not expressible: request_timeout_ms = 60000; TGI has no request timeout of its own.
# Not exact: lengths. Batchscope counts tiny_lm's own tokens; another tokenizer gives
# another count for the same text.
exec text-generation-launcher --model-id "${MODEL_ID:?set MODEL_ID to the model to serve}" \
  --max-concurrent-requests 560 \
  --max-batch-size 48 \
  --max-batch-prefill-tokens 768 \
  --max-batch-total-tokens 16384 \
  --max-input-tokens 768 \
  --max-total-tokens 1024 \
  --waiting-served-ratio 0 \
  --max-waiting-tokens 1 \
  "$@"
