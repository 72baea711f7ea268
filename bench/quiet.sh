#!/usr/bin/env bash
# quiet.sh takes issue 25's figures in one command, for a quiet machine:
# OLD (f19491b) and NEW (HEAD) back to back, ROUNDS times, each round
# running bench/run.sh on both with the issue's scenarios, then prints the
# median of the rounds beside the issue's targets. See bench/README.md,
# "Issue 25: the quiet-machine figures in one command".
#
#   bash bench/quiet.sh                         # ~28 min on a quiet 2-core machine
#   ROUNDS=1 DURATION=2s COLD_N=200 bash bench/quiet.sh   # a check that it works (~8 min)
#   bash bench/quiet.sh --table DIR             # the table again, from a finished run's files
#
# Environment (defaults in brackets): ROUNDS [3], OLD [f19491b], NEW [HEAD],
# DURATION [4s, whole seconds] WARMUP [1s] SLICE [1s] (per target, server and ceiling alternated),
# COLD_N [10000] COLD_SIZE [256KiB], GATEWAY_N [1000], ABUSE_HOLD [10s],
# QUIET [0.3] QUIET_WAIT [30s] (run.sh's wait for a quiet machine before each
# scenario), OUTDIR [bench/results/<UTC date>-issue25-quiet], CACHE_DIR, where
# each revision's binaries and data directory (with the cold scenario's
# reports, saved once per revision) are kept between rounds
# [${TMPDIR:-/tmp}/resourced-quiet; removed at the end unless KEEP_CACHE=1].
set -euo pipefail
cd "$(dirname "$0")/.."

# extract FILE prints "metric<TAB>value" lines of one run.sh results file:
# ratio:<label> and rps:<label> of each summary row, cpu:<label> (server µs
# per request), rss:<abuse scenario> (peak MiB), rssgrowth:<abuse scenario>
# (peak less the idle RSS before the abuse: a larger binary maps more of its
# own text at start, which is not what the abuse costs), rssanon:<abuse
# scenario> (peak RssAnon: heap and stacks, none of the binary), gw:<protocol>
# (p50 ratio), gwfloor:<protocol> (a plain reverse proxy's p50 ratio, the
# floor of one hop) and gwhop:<protocol> (the gateway's p50 over the proxy's).
extract() {
	awk '
	/^## / { sec = substr($0, 4); next }
	/^cpu +server [0-9]+ µs per request/ { printf "cpu:%s\t%s\n", sec, $3 }
	sec ~ /^abuse / && /"rssIdleMiB":/ && !seenIdle[sec]++ { idle[sec] = $2; sub(/,$/, "", idle[sec]) }
	sec ~ /^abuse / && /"rssAnonPeakMiB":/ && !seenAnon[sec]++ { v = $2; sub(/,$/, "", v); printf "rssanon:%s\t%s\n", substr(sec, 7), v }
	sec ~ /^abuse / && /"rssPeakMiB":/ && !seen[sec]++ {
		v = $2; sub(/,$/, "", v); printf "rss:%s\t%s\n", substr(sec, 7), v
		if (sec in idle) printf "rssgrowth:%s\t%.1f\n", substr(sec, 7), v - idle[sec]
	}
	sec ~ /^gateway: / && /"p50Ratio":/ { v = $2; sub(/,$/, "", v); p = sec; sub(/.*\(/, "", p); sub(/\).*/, "", p); printf "gw:%s\t%s\n", p, v }
	sec ~ /^gateway: / && /"proxyP50Ratio":/ { v = $2; sub(/,$/, "", v); p = sec; sub(/.*\(/, "", p); sub(/\).*/, "", p); printf "gwfloor:%s\t%s\n", p, v }
	sec ~ /^gateway: / && /"gatewayOverProxy":/ { v = $2; sub(/,$/, "", v); p = sec; sub(/.*\(/, "", p); sub(/\).*/, "", p); printf "gwhop:%s\t%s\n", p, v }
	sec == "summary" && /^\| / && !/^\| scenario/ && !/^\|---/ {
		n = split($0, f, "|"); label = f[2]; gsub(/^ +| +$/, "", label)
		r = f[10]; gsub(/ /, "", r); q = f[3]; gsub(/ /, "", q)
		if (r != "" && r != "-") printf "ratio:%s\t%s\n", label, r
		printf "rps:%s\t%s\n", label, q
	}' "$1"
}

# median FILES... prints "metric<TAB>median" over the files' extracts.
median() {
	for f in "$@"; do extract "$f"; done | sort -t$'\t' -k1,1 -k2,2g | awk -F'\t' '
	function flush() { if (n) printf "%s\t%.4g\n", m, (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) }
	$1 != m { flush(); m = $1; n = 0 }
	{ v[++n] = $2 }
	END { flush() }'
}

# table DIR prints the median table of a finished run in DIR.
table() {
	local dir=$1 old new
	old=$(cat "$dir/old.label") new=$(cat "$dir/new.label")
	median "$dir"/round*-old.txt >"$dir/old.median"
	median "$dir"/round*-new.txt >"$dir/new.median"
	echo "Median of $(ls "$dir"/round*-new.txt | wc -l) rounds ($dir), $old against $new:"
	echo
	echo "| figure | $old | $new | target | met |"
	echo "|---|--:|--:|---|---|"
	awk -F'\t' -v OLDF="$dir/old.median" '
	BEGIN { while ((getline l < OLDF) > 0) { split(l, a, "\t"); old[a[1]] = a[2] } }
	{ new[$1] = $2 }
	function row(name, key, target, kind, lim,   o, n, met) {
		o = (key in old) ? old[key] : "—"; n = (key in new) ? new[key] : "—"
		met = "?"
		if (n != "—") {
			if (kind == "min") met = (n + 0 >= lim) ? "yes" : "no"
			if (kind == "max") met = (n + 0 <= lim) ? "yes" : "no"
			if (kind == "notworse" && o != "—") met = (n + 0 >= o + 0) ? "yes" : "no"
			if (kind == "notmore" && o != "—") met = (n + 0 <= o + 0) ? "yes" : "no"
			if (kind == "") met = ""
		}
		printf "| %s | %s | %s | %s | %s |\n", name, o, n, target, met
	}
	END {
		row("read 1 KiB c=16, 2026-07-28, ratio to ceiling", "ratio:read 1KiB c=16", "≥ 0.55", "min", 0.55)
		row("read 256 KiB hot c=16, 2026-07-28, ratio", "ratio:read 256KiB c=16", "≥ 0.75", "min", 0.75)
		row("read 1 KiB c=16, 2025-11-25, ratio", "ratio:read 1KiB c=16 (2025-11-25)", "≥ 0.55", "min", 0.55)
		row("read 256 KiB hot c=16, 2025-11-25, ratio", "ratio:read 256KiB c=16 (2025-11-25)", "≥ 0.75", "min", 0.75)
		for (k in new) if (k ~ /^ratio:cold read/) { c = k }
		row(substr(c, 7) ", ratio to ceiling", c, "no worse than OLD", "notworse")
		row("save_search_snapshot 1 KiB c=16, ratio to write ceiling", "ratio:save_search_snapshot 1KiB c=16 vs write ceiling", "≥ 0.6", "min", 0.6)
		row("save_report 1 KiB c=16, ratio to write ceiling", "ratio:save_report 1KiB c=16 vs write ceiling", "≥ 0.6", "min", 0.6)
		row("save_search_snapshot c=16, server µs per save", "cpu:save_search_snapshot 1KiB c=16 vs write ceiling", "published", "")
		row("save_report c=16, server µs per save", "cpu:save_report 1KiB c=16 vs write ceiling", "published", "")
		row("abuse noread, peak RSS MiB", "rss:noread", "no worse than OLD", "notmore")
		row("abuse slowbody, peak RSS MiB", "rss:slowbody", "no worse than OLD", "notmore")
		row("abuse noread, peak − idle RSS MiB", "rssgrowth:noread", "no worse than OLD", "notmore")
		row("abuse slowbody, peak − idle RSS MiB", "rssgrowth:slowbody", "no worse than OLD", "notmore")
		row("abuse noread, peak RssAnon MiB (heap, stacks)", "rssanon:noread", "no worse than OLD", "notmore")
		row("abuse slowbody, peak RssAnon MiB (heap, stacks)", "rssanon:slowbody", "no worse than OLD", "notmore")
		row("gateway pass-through p50 / direct, 2026-07-28", "gw:2026-07-28", "≤ 1.3", "max", 1.3)
		row("gateway pass-through p50 / direct, 2025-11-25", "gw:2025-11-25", "≤ 1.3", "max", 1.3)
		row("plain reverse proxy p50 / direct (the floor of one hop), 2026-07-28", "gwfloor:2026-07-28", "", "")
		row("plain reverse proxy p50 / direct (the floor of one hop), 2025-11-25", "gwfloor:2025-11-25", "", "")
		row("gateway p50 / plain reverse proxy p50, 2026-07-28", "gwhop:2026-07-28", "", "")
		row("gateway p50 / plain reverse proxy p50, 2025-11-25", "gwhop:2025-11-25", "", "")
	}' "$dir/new.median"
}

if [ "${1:-}" = --table ]; then
	[ -n "${2:-}" ] || { echo "usage: bash bench/quiet.sh --table DIR" >&2; exit 2; }
	table "$2"
	exit 0
fi
[ $# -eq 0 ] || { echo "usage: bash bench/quiet.sh [--table DIR]" >&2; exit 2; }

ROUNDS=${ROUNDS:-3}
OLD=${OLD:-f19491b}
NEW=${NEW:-HEAD}
OUTDIR=${OUTDIR:-bench/results/$(date -u +%Y-%m-%d)-issue25-quiet}
CACHE_DIR=${CACHE_DIR:-${TMPDIR:-/tmp}/resourced-quiet}
export DURATION=${DURATION:-4s} WARMUP=${WARMUP:-1s} SLICE=${SLICE:-1s}
export COLD_N=${COLD_N:-10000} COLD_SIZE=${COLD_SIZE:-256KiB} GATEWAY_N=${GATEWAY_N:-1000}
export QUIET=${QUIET:-0.3} QUIET_WAIT=${QUIET_WAIT:-30s} RETRIES=0
export SCENARIOS="read protocol cold save abuse-noread abuse-slowbody gateway"
export SIZES="1KiB 256KiB" CONCURRENCY=16 PROTOCOL_SIZES="1KiB 256KiB" PROTOCOL=2026-07-28 SAVE_CONCURRENCY=16
# f19491b has neither the search index nor the form cache: the index is off
# on both, the cache is HEAD's default.
export INDEX=off PREPARE_C=${PREPARE_C:-64}
export ABUSE_ARGS="-hold ${ABUSE_HOLD:-10s}"
export BIN_CACHE=$CACHE_DIR/bin

old_sha=$(git rev-parse --short "$OLD^{commit}")
new_sha=$(git rev-parse --short "$NEW^{commit}")
mkdir -p "$OUTDIR" "$CACHE_DIR"
echo "$OLD ($old_sha)" >"$OUTDIR/old.label"
echo "$NEW ($new_sha)" >"$OUTDIR/new.label"

# What it takes: per revision and round, 11 targets of WARMUP + 2 x DURATION
# (+ ~2 s to capture and switch), two abuse scenarios of ABUSE_HOLD + ~15 s,
# two gateway runs of ~2 x GATEWAY_N calls + ~20 s; once per revision the
# build and the cold scenario's COLD_N saves (~1-3 min on a quiet machine).
secs() { local v=$1; v=${v%s}; echo "${v%%.*}"; }
per=$(( 11 * ($(secs "$WARMUP") + 2 * $(secs "$DURATION") + 2) + 2 * ($(secs "${ABUSE_HOLD:-10s}") + 15) + 2 * (GATEWAY_N * 6 / 1000 + 20) + 20 ))
est=$(( (2 * ROUNDS * per + 2 * 150) / 60 ))
echo "bench/quiet.sh: $ROUNDS rounds of $OLD ($old_sha) then $NEW ($new_sha), ~${per}s each, ~${est} min in all; results in $OUTDIR" >&2

start=$(date +%s)
for r in $(seq 1 "$ROUNDS"); do
	for side in old new; do
		# The commit, not the name: HEAD may move while this runs.
		rev=$old_sha sha=$old_sha
		[ "$side" = new ] && rev=$new_sha sha=$new_sha
		echo "bench/quiet.sh: round $r/$ROUNDS, $rev, $(( ($(date +%s) - start) / 60 )) min in" >&2
		cmp=()
		[ "$side" = new ] && cmp=(COMPARE="$OUTDIR/round$r-old.txt")
		env "${cmp[@]}" REV="$rev" DATA_DIR="$CACHE_DIR/data-$sha" OUT="$OUTDIR/round$r-$side.txt" bash bench/run.sh
	done
done
echo "bench/quiet.sh: done in $(( ($(date +%s) - start) / 60 )) min" >&2
[ "${KEEP_CACHE:-}" = 1 ] || rm -rf "$CACHE_DIR"
table "$OUTDIR" | tee "$OUTDIR/median.md"
