#!/usr/bin/env bash
# saves with the bleve index on vs off: base 9e1cd88 (each save waits for its
# index update) then h27b (background indexer), back to back in one run;
# then h27b's on against the base's on. save_report 4 KiB, c=8, alternated 2 s slices.
set -u
B=/tmp/h27b-bin; W=/tmp/h27b-run; mkdir -p $W; cd $W
la() { echo "loadavg: $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M:%S)"; }
cfg() { printf 'store: {backend: bbolt}\nindex: {backend: %s}\nauth: {mode: none}\nbudgets: {tenantSaveRate: -1, tenantInflight: -1}\nlogLevel: warn\n' "$1" > $W/$2.yaml; }
cfg bleve on; cfg off off
rm -rf bon boff non noff
$B/resourced-base serve --config on.yaml --data-dir bon --listen 127.0.0.1:18931 >bon.log 2>&1 & p1=$!
$B/resourced-base serve --config off.yaml --data-dir boff --listen 127.0.0.1:18932 >boff.log 2>&1 & p2=$!
$B/resourced serve --config on.yaml --data-dir non --listen 127.0.0.1:18933 >non.log 2>&1 & p3=$!
$B/resourced serve --config off.yaml --data-dir noff --listen 127.0.0.1:18934 >noff.log 2>&1 & p4=$!
for i in $(seq 200); do ok=1; for p in 18931 18932 18933 18934; do curl -sf http://127.0.0.1:$p/healthz >/dev/null || ok=0; done; [ $ok = 1 ] && break; sleep 0.2; done
run() { la; echo "== $1"; $B/resourced-bench -url http://127.0.0.1:$2/mcp -vs http://127.0.0.1:$3/mcp -op save -tool save_report -size 4KiB -c 8 -d 20s -slice 2s 2>&1 | tail -6; }
run "before (9e1cd88): A index on, B index off" 18931 18932
run "after (h27b): A index on, B index off" 18933 18934
run "A after (h27b) index on, B before (9e1cd88) index on" 18933 18931
la
kill $p1 $p2 $p3 $p4; wait
echo done
