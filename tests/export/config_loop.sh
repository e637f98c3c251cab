#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The configuration document goes round every place that reads or writes
# options: PUT /v1/config, GET /v1/config saved to a file, export to Triton
# from that file, import back, serve --config with the result, and GET again:
# the options in force at the end are the ones PUT at the start. The saved
# GET document also works as it is for serve --config, export --config,
# import and PUT.
# Usage: config_loop.sh BATCHSCOPE WORKDIR
set -euo pipefail
bin=$1
dir=$2
rm -rf "$dir"
mkdir -p "$dir"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT

# Starts serve with the given flags; sets $url.
serve() {
  local log="$dir/serve$((${#pids[@]})).log"
  "$bin" serve --synthetic 50,5 --port 0 "$@" >"$log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 200); do
    grep -q "listening on" "$log" && break
    sleep 0.05
  done
  url=$(grep -o 'http://[0-9.:]*' "$log" || true)
  [ -n "$url" ] || { echo "serve never said where it listens"; cat "$log"; exit 1; }
}
options_of() {  # the "options" object of a GET /v1/config document, one key a line
  python3 -c 'import json, sys; o = json.load(open(sys.argv[1]))["options"]; [print(k, o[k]) for k in sorted(o)]' "$1"
}

serve
put='{"strategy": "adaptive", "target_p99_ms": 7.5, "max_batch_size": 24, "max_wait_ms": 1.5,
      "queue_capacity": 333, "request_timeout_ms": 4444, "num_lanes": 2}'
code=$(curl -s -o "$dir/put.json" -w '%{http_code}' -X PUT --data "$put" "$url/v1/config")
[ "$code" = 200 ] || { echo "PUT answered $code: $(cat "$dir/put.json")"; exit 1; }
curl -sf "$url/v1/config" >"$dir/saved.json"

# The saved document, as it is, everywhere options are read.
"$bin" export --config "$dir/saved.json" --format triton --out "$dir/config.pbtxt" >/dev/null
"$bin" import --from "$dir/config.pbtxt" --out "$dir/imported.json" >/dev/null 2>&1
"$bin" import --from "$dir/saved.json" --out "$dir/imported_direct.json" >/dev/null
cmp "$dir/imported.json" "$dir/imported_direct.json"
code=$(curl -s -o "$dir/put_back.json" -w '%{http_code}' -X PUT --data @"$dir/saved.json" "$url/v1/config")
[ "$code" = 200 ] || { echo "PUT of the GET document answered $code: $(cat "$dir/put_back.json")"; exit 1; }

# A new server from what came back through Triton, and one from the saved file.
serve --config "$dir/imported.json"
curl -sf "$url/v1/config" >"$dir/final.json"
serve --config "$dir/saved.json"
curl -sf "$url/v1/config" >"$dir/final_direct.json"
diff <(options_of "$dir/saved.json") <(options_of "$dir/final.json")
diff <(options_of "$dir/saved.json") <(options_of "$dir/final_direct.json")
echo "PUT, GET, save, export to Triton, import and serve agree on every option"
