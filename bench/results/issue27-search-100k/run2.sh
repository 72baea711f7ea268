#!/usr/bin/env bash
# saves with the bleve index: this branch (pending record) vs its base 9e365e5, alternated 2 s slices
set -u
B=/tmp/h27bin; W=/tmp/h27run; cd $W
la() { echo "loadavg: $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M:%S)"; }
rm -rf sh27 sbase
$B/resourced serve --config on.yaml --data-dir sh27 --listen 127.0.0.1:18821 >sh27.log 2>&1 & pa=$!
$B/resourced-base serve --config on.yaml --data-dir sbase --listen 127.0.0.1:18822 >sbase.log 2>&1 & pb=$!
for i in $(seq 100); do curl -sf http://127.0.0.1:18821/healthz >/dev/null && curl -sf http://127.0.0.1:18822/healthz >/dev/null && break; sleep 0.2; done
la
echo "== A: h27 (bleve + pending record), B: 9e365e5 (bleve), save_report 4 KiB, c=8"
$B/resourced-bench -url http://127.0.0.1:18821/mcp -vs http://127.0.0.1:18822/mcp -op save -tool save_report -size 4KiB -c 8 -d 20s -slice 2s 2>&1 | tail -6
la
echo "== the same, c=1"
$B/resourced-bench -url http://127.0.0.1:18821/mcp -vs http://127.0.0.1:18822/mcp -op save -tool save_report -size 4KiB -c 1 -d 20s -slice 2s 2>&1 | tail -6
la
kill $pa $pb; wait
echo done
