#!/usr/bin/env bash
# gateway-ab.sh A B TOOL [ROUNDS] [N]: server-everything once; gateways A and B
# (two resourced binaries; TOOL is resourced-bench) each fronting it (+ server-filesystem over stdio);
# resourced-bench gateway pass-through against A then B (then B then A), both
# protocols; p50 ratio and the gateway's CPU per call (utime+stime / calls).
set -euo pipefail
A=$1 B=$2 TOOL=$3 ROUNDS=${4:-3} N=${5:-1000}
W=$(mktemp -d); rm -rf "$W"; mkdir -p "$W/files"
UP=$(cd "$(dirname "$0")/.." && pwd)/integration/upstreams
EV=$UP/node_modules/@modelcontextprotocol/server-everything/dist/index.js
FS=$UP/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
EVPORT=${EVPORT:-18931}
PORT=$EVPORT node --import "$UP/loopback.mjs" "$EV" streamableHttp </dev/null >"$W/ev.log" 2>&1 &
EVPID=$!
pids=()
cleanup() { kill "${pids[@]}" "$EVPID" 2>/dev/null || true; rm -rf "$W"; }
trap cleanup EXIT
declare -A GWPID GWPORT
port=18940
for s in A B; do
  mkdir -p "$W/$s"
  cat >"$W/$s/gw.yaml" <<Y
listen: 127.0.0.1:$port
dataDir: $W/$s/data
logLevel: ${LOG_LEVEL:-info}
auth:
  mode: none
gateway:
  upstreams:
    - name: everything
      url: http://127.0.0.1:$EVPORT/mcp
    - name: fs
      command: node
      args: ["$FS", "$W/files"]
Y
  bin=$A; [ $s = B ] && bin=$B
  "$bin" gateway --config "$W/$s/gw.yaml" </dev/null >"$W/$s/out" 2>"$W/$s/log" &
  GWPID[$s]=$!; GWPORT[$s]=$port; pids+=($!)
  port=$((port+1))
done
for i in $(seq 1 100); do
  grep -q "listening on port" "$W/ev.log" 2>/dev/null && curl -s -o /dev/null "http://127.0.0.1:${GWPORT[A]}/readyz" && curl -s -o /dev/null "http://127.0.0.1:${GWPORT[B]}/readyz" && break
  sleep 0.2
done
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
tck=$(getconf CLK_TCK)
for r in $(seq 1 "$ROUNDS"); do
  order="A B"; [ $((r % 2)) -eq 0 ] && order="B A"
  for proto in 2026-07-28 2025-11-25; do
    for s in $order; do
      c0=$(cpu ${GWPID[$s]})
      out=$("$TOOL" gateway -gateway "http://127.0.0.1:${GWPORT[$s]}/mcp" -direct "http://127.0.0.1:$EVPORT/mcp" \
        -protocol $proto -tool echo -gateway-tool everything__echo -n "$N" -json)
      c1=$(cpu ${GWPID[$s]})
      echo "$out" | python3 -c "
import json,sys
d=json.load(sys.stdin)['passThrough']
calls=d['callsEach']+20
print('round $r $proto $s load %s  gw %.3f direct %.3f ratio %.3f  cpu/call %.0f us' % (open('/proc/loadavg').read().split()[0], d['gatewayP50Ms'], d['directP50Ms'], d['p50Ratio'], ($c1-$c0)/$tck*1e6/calls))"
    done
  done
done
