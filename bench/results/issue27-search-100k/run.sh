#!/usr/bin/env bash
# issue 27 search figures: 10k and 100k documents per tenant prepared in bulk
# (-prepare-bbolt, then resourced reindex --workers 512), queries against each,
# index bytes per stored byte, and saves with the index on vs off (alternated).
set -u
B=/tmp/h27bin; W=/tmp/h27run; cd $W
la() { echo "loadavg: $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M:%S)"; }
cfg() { printf 'store: {backend: bbolt}\nindex: {backend: %s}\nauth: {mode: none}\nbudgets: {tenantSaveRate: -1, tenantInflight: -1}\nlogLevel: warn\n' "$1" > $W/$2.yaml; }
cfg bleve on; cfg off off
rm -rf d10k d100k son soff
la
for n in 10k 100k; do
  echo "== prepare $n"; la
  $B/resourced-bench -op search -prepare $n -prepare-bbolt d$n -prepare-c 8 -size 2KiB -d 0 -tenant default 2>&1 | grep -v '^preparing\|progress' | tail -2
  echo "== reindex $n --workers 512"; la
  /usr/bin/time -f "reindex: %e s, max RSS %M KiB" $B/resourced reindex --quiet --workers 512 --config on.yaml --data-dir d$n
  la
done
search() { # n port
  $B/resourced serve --config on.yaml --data-dir d$1 --listen 127.0.0.1:$2 >srv$1.log 2>&1 & local pid=$!
  for i in $(seq 100); do curl -sf http://127.0.0.1:$2/healthz >/dev/null && break; sleep 0.2; done
  echo "== search at $1"; la
  $B/resourced-bench -url http://127.0.0.1:$2/mcp -op search -keys $1 -c 4 -d 20s -warmup 3s -tenant default -index-dir d$1/index.bleve -pid $pid 2>&1 | tail -8
  la
  kill $pid; wait $pid 2>/dev/null
}
search 10k 18811
search 100k 18812
echo "== saves, index on (A) vs off (B), 4 KiB reports, c=8, alternated 2 s slices"
$B/resourced serve --config on.yaml --data-dir son --listen 127.0.0.1:18813 >son.log 2>&1 & pa=$!
$B/resourced serve --config off.yaml --data-dir soff --listen 127.0.0.1:18814 >soff.log 2>&1 & pb=$!
for i in $(seq 100); do curl -sf http://127.0.0.1:18813/healthz >/dev/null && curl -sf http://127.0.0.1:18814/healthz >/dev/null && break; sleep 0.2; done
la
$B/resourced-bench -url http://127.0.0.1:18813/mcp -vs http://127.0.0.1:18814/mcp -op save -tool save_report -size 4KiB -c 8 -d 20s -slice 2s 2>&1 | tail -8
la
kill $pa $pb; wait
du -sb d10k/resourced.db d10k/index.bleve d100k/resourced.db d100k/index.bleve
echo done
