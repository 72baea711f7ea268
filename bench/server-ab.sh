#!/usr/bin/env bash
# server-ab.sh: two resourced servers side by side (bbolt, JWT, index off,
# the capacity scenarios' budgets), A and B, each loaded in turn by
# resourced-bench against its in-process ceiling, ROUNDS times, A first.
# What differs between them is a binary (A_BIN, B_BIN), an environment
# (A_ENV, B_ENV: e.g. "GOGC=100") or config lines (A_YAML, B_YAML: e.g.
# "gcHeadroom: 0"). One line per round and side: requests/s of the
# server and of the ceiling, their ratio, the server's CPU per request,
# p50 and its peak RSS.
#
#   A_ENV=GOGC=100 bash bench/server-ab.sh                       # 1 KiB reads, 3 rounds of 4 s
#   OP=save SIZE=1KiB A_YAML="gcHeadroom: 0" bash bench/server-ab.sh
#   SIZE=256KiB PROTO=2025-11-25 A_BIN=/tmp/old/resourced bash bench/server-ab.sh
#
# TOOL is resourced-bench (built from this checkout when unset), A_BIN and
# B_BIN default to a resourced built from this checkout.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$W"' EXIT
if [ -z "${TOOL:-}" ] || [ -z "${A_BIN:-}" ] || [ -z "${B_BIN:-}" ]; then
	(cd "$ROOT" && go build -o "$W/resourced" ./cmd/resourced && go build -o "$W/resourced-bench" ./bench/cmd/resourced-bench)
fi
TOOL=${TOOL:-$W/resourced-bench} A_BIN=${A_BIN:-$W/resourced} B_BIN=${B_BIN:-$W/resourced}
SIZE=${SIZE:-1KiB} ROUNDS=${ROUNDS:-3} D=${D:-4s} PROTO=${PROTO:-2026-07-28} OP=${OP:-read} C=${C:-16}
declare -A PID PORT TOK
port=${PORT_BASE:-18801}
for s in A B; do
	mkdir -p "$W/$s"
	cat >"$W/$s/c.yaml" <<Y
listen: 127.0.0.1:$port
baseURL: http://127.0.0.1:$port
dataDir: $W/$s/data
logLevel: ${LOG_LEVEL:-info}
budgets: {tenantSaveRate: -1, tenantInflight: -1}
index: {backend: off}
Y
	bin=$A_BIN envs=${A_ENV:-} yaml=${A_YAML:-}
	[ $s = B ] && bin=$B_BIN envs=${B_ENV:-} yaml=${B_YAML:-}
	printf '%s\n' "$yaml" >>"$W/$s/c.yaml"
	# shellcheck disable=SC2086 # the environment is words on purpose
	env $envs "$bin" serve --config "$W/$s/c.yaml" </dev/null >/dev/null 2>"$W/$s/log" &
	PID[$s]=$! PORT[$s]=$port
	port=$((port + 1))
done
for s in A B; do
	for _ in $(seq 1 100); do
		TOK[$s]=$("$A_BIN" token --config "$W/$s/c.yaml" --ttl 1h 2>/dev/null) && break
		sleep 0.1
	done
done
for r in $(seq 1 "$ROUNDS"); do
	for s in A B; do
		extra=()
		[ "$OP" = save ] && extra=(-tool save_report -ceiling-dir "$W/$s")
		"$TOOL" -url "http://127.0.0.1:${PORT[$s]}/mcp" -token "${TOK[$s]}" -op "$OP" -size "$SIZE" -c "$C" \
			-d "$D" -warmup 1s -protocol "$PROTO" -ceiling -slice 1s -pid "${PID[$s]}" -json "${extra[@]}" 2>/dev/null >"$W/out.json"
		python3 - "$r" "$s" "$W/out.json" <<'PY'
import json, sys
r, s, f = sys.argv[1:]
d = json.load(open(f))
print("round %s %s: %.0f/s, ceiling %.0f/s, ratio %.3f, server %.1f µs/request, p50 %.3f ms, peak RSS %.1f MiB" % (
    r, s, d["server"]["perSecond"], d["ceiling"]["perSecond"], d["ratio"], d.get("serverCPUMicros", 0),
    d["server"]["p50Ms"], d.get("rss", {}).get("peakMiB", 0)))
PY
	done
done
