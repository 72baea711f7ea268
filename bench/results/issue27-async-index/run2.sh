#!/usr/bin/env bash
# h27b, index on: a 20 s burst of saves, then at once searches (c=1): the
# first search waits for what the background indexer still owes.
set -u
B=/tmp/h27b-bin; W=/tmp/h27b-run; cd $W
la() { echo "loadavg: $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M:%S)"; }
rm -rf non2
$B/resourced serve --config on.yaml --data-dir non2 --listen 127.0.0.1:18935 >non2.log 2>&1 & p=$!
for i in $(seq 200); do curl -sf http://127.0.0.1:18935/healthz >/dev/null && break; sleep 0.2; done
la
echo "== burst: save_report 4 KiB, c=8, 20 s"
$B/resourced-bench -url http://127.0.0.1:18935/mcp -op save -tool save_report -size 4KiB -c 8 -d 20s -pid $p 2>&1 | tail -3
echo "== at once: search_resources c=1, 5 s (no warmup)"
$B/resourced-bench -url http://127.0.0.1:18935/mcp -op search -keys 1k -c 1 -d 5s -warmup 0 2>&1 | tail -3
la
kill $p; wait
echo done
