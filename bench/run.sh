#!/usr/bin/env bash
# run.sh builds resourced and the load tool, starts resourced on a temporary
# data directory on 127.0.0.1 with JWT auth (the dev HMAC key its first start
# creates, and a token minted with `resourced token`), runs the benchmark
# scenarios and writes their results. See bench/README.md.
#
#   bash bench/run.sh                  # every scenario on bbolt → bench/results/<date>-bbolt.txt
#   BACKEND=s3 bash bench/run.sh       # the same on S3 (versitygw, started by scripts/versitygw.sh)
#   REV=HEAD bash bench/run.sh         # benchmark a commit, built from a clean export of it
#   bash bench/run.sh --smoke          # ~30 s: one read with ceiling, one save, each abuse scenario and the gateway tiny; for CI
#   SCENARIOS=abuse bash bench/run.sh  # the abuse scenarios (issue 13), each on a freshly started server
#
# Environment (defaults in brackets):
#   BACKEND       bbolt | s3 [bbolt]
#   S3_READ_CACHE store.s3.readCache of the server, e.g. 0 (off) or 64MiB [the default, 64MiB]
#   S3_CPUS       (BACKEND=s3) pin the versitygw run.sh starts to these CPUs (taskset list,
#                 e.g. 1), as an S3 service has machines of its own [not pinned]
#   CPUS          pin resourced and the load tool to these CPUs, e.g. 0 [not pinned]
#   REV           what to build the server from: "worktree" (the files as they are) or a
#                 git revision, exported with git archive (the load tool is always built
#                 from the worktree) [worktree]
#   SCENARIOS     which scenarios, in this order [rss read protocol save scale profile gobench]
#   PROTOCOL      2026-07-28 | 2025-11-25 [2026-07-28]
#   DURATION      measured load per target and scenario [10s]
#   WARMUP        unmeasured load before each [2s]
#   SLICE         alternation slice between server and ceiling [2s]
#   SIZES         read scenario body sizes [1KiB 64KiB 256KiB 1MiB 8MiB]
#   CONCURRENCY   read scenario concurrencies [1 16 64]
#   SCALE_COUNTS  stored-resource counts of the scale scenario, ascending [10000 100000]
#   INDEX         index.backend of the server, e.g. off (a REV without the search index has none)
#                 [the server's default: bleve on bbolt]
#   CACHE         cache.maxBytes of the server, e.g. 0 (off) or 1GiB (a REV without the form
#                 cache has none) [the server's default: 64MiB]
#   GC_HEADROOM   gcHeadroom of the server, e.g. 0 (the runtime's GOGC=100) or 16MiB (a REV
#                 from before it has no such key, and ignores this) [the default, 32MiB]
#   PROTOCOL_SIZES  body sizes of the protocol scenario [1KiB]
#   CEILING_PROCESS  1: the read and protocol scenarios also load the ceiling run in a process of
#                 its own (resourced-bench -ceiling-process), alternated with the server and the
#                 in-process ceiling, and print the ratio to it and its CPU per request [off]
#   COLD_N, COLD_SIZE  the cold scenario's stored reports and their size [10000 256KiB]
#   PREPARE_C     concurrency of the scale scenario's saves [64]
#   DATA_DIR      the server's data directory, kept after the run [a new one in the run's
#                 temporary directory]. The cold scenario's reports are saved once per
#                 DATA_DIR: a later run on it (another round of the same REV) reads them
#                 without saving them again (bench/quiet.sh keeps one per revision)
#   BIN_CACHE     a directory where the binaries built from a git REV are kept, by commit:
#                 a later run of the same commit skips the build (bench/quiet.sh) []
#   GATEWAY_PROTOCOLS  the protocol versions of the gateway scenario [PROTOCOL and the other]
#   SAVE_CONCURRENCY   the save scenario's save_report concurrencies [16 64]
#   LOG_LEVEL     the server's log level [info, the default: one line per request]
#   QUIET         before each scenario, wait until other processes use at most this
#                 many cores (a shared machine) [0.3; smoke: 0, no wait]
#   QUIET_WAIT    ... for at most this long, then run anyway [3m]
#   RETRIES       measure a scenario again up to this many times while other processes
#                 used more than QUIET cores during it; the quietest attempt is kept [2]
#   OUT           results file [bench/results/<UTC date>-<backend>.txt; smoke: none]; its ratio
#                 tables are also drawn beside it as ${OUT%.txt}.svg (bench/cmd/benchsvg)
#   COMPARE       results files of earlier runs (e.g. of REV=f19491b), drawn beside this one's in
#                 the SVG, oldest first []
#   ABUSE_ARGS    extra flags for every abuse scenario, e.g. "-hold 10s" []
#   ABUSE_BUDGETS the abuse server's budgets section, e.g. "{writeMinRate: 1MiB}" [the defaults]
#   ABUSE_ARGS_<scenario>  extra flags for one (- becomes _: ABUSE_ARGS_noisy_tenant),
#                 e.g. ABUSE_ARGS_slowbody="-conns 10000 -mcp-conns 1000" []
#
# Scenarios:
#   rss       peak RSS of a freshly started server during 16 concurrent 8 MiB reads
#   read      resources/read of each SIZES body at each CONCURRENCY, with the ceiling
#   protocol  the c=16 read of each PROTOCOL_SIZES body again speaking the other protocol version
#   cold      COLD_SIZE reads at c=16, each of one of COLD_N reports saved first (far more than
#             cache.maxBytes holds: nearly every read misses the form cache), with the ceiling
#             (not in the default list)
#   s3read    (BACKEND=s3) resources/read of 1 KiB and 256 KiB at c=16 against a presigned GET of
#             the same object straight from the S3 server, alternated (not in the default list)
#   floor     the raw bbolt floor: fsynced 1 KiB puts from 16 goroutines through the store's
#             group commit, no MCP (Go benchmarks of store/boltstore; not in the default list)
#   s3save    (BACKEND=s3) 1 KiB save_report at c=16 against a presigned create-only PUT of a new
#             1 KiB object straight from the S3 server, alternated (not in the default list)
#   save      1 KiB save_search_snapshot at c=16 and save_report at c=16 and c=64, each against
#             the write ceiling (resourced-bench -op save -ceiling: a plain net/http handler that
#             stores the body through boltstore's group commit on the same disk), with the
#             server's CPU per save
#   scale     1 KiB reads at c=16 among SCALE_COUNTS stored resources (saved first), and a
#             list_resources page (100) at a random place among them
#   profile   CPU profiles of an in-process server (bbolt, jwt) under 1 KiB and
#             256 KiB reads at c=16, summarised with go tool pprof -top
#   gobench   the Go benchmarks of the hot paths (go test ./bench -bench . -benchmem)
#   gateway   `resourced gateway` vs its upstreams called directly (issue 15; not in the
#             default list): the p50 of a small server-everything echo through the gateway
#             over the same call made directly, alternated; read_text_file of a 2 MB log
#             through the gateway (offloaded to a link) vs from server-filesystem directly:
#             bytes reaching the caller and time to the answer. Needs integration/upstreams
#             (npm ci --prefix integration/upstreams). GATEWAY_N pass-through calls each [1000]
#   gateway-memory  `resourced gateway` fronting server-filesystem (stdio): read_text_file of a
#             40 MiB and a 100 MiB text, one call each, then 4 calls at once of a 30 MiB one;
#             each call's outcome and time and the gateway's peak RSS per phase (issue 24;
#             not in the default list; needs integration/upstreams). GWMEM_SIZES_MIB ["40 100 30"]
#   abuse     all five abuse scenarios below, in this order (not in the default list)
#   abuse-slowbody      slow upload and /mcp bodies holding connections; a 1 KiB probe read meanwhile
#   abuse-noread        clients asking for a 16 MiB body of '"' and never reading; server RSS
#   abuse-listen        one subscriptions/listen naming one 16 MiB resource 2000 times; server CPU
#   abuse-noisy-tenant  tenant A saturating saves; tenant B's 1 KiB read p50/p99, quiet vs noisy
#   abuse-timing        tenant B reading A's private 15 MiB report vs a never-existed URI
#   abuse-query         two quadratic JSONPath queries of tenant A; tenant B's $.a[0] meanwhile (issue 24)
#   abuse-uploads       80 slow uploads of tenant A; tenant B's 11-byte upload meanwhile (issue 24)
#   abuse-gateway-flood `resourced gateway` (JWT, server-filesystem perTenant): tenant A reads a
#             GWFLOOD_MIB [30] MiB file at -c 8 in a loop; tenant B's 1 KiB reads, alone and
#             beside A: p50/p99, refusals (issue 24; not in `abuse`; needs integration/upstreams);
#             GWFLOOD_MAX_IN_FLIGHT, GWFLOOD_MAX_TENANT_IN_FLIGHT set the gateway's budgets
#
# Exit status: 0 when every scenario ran; non-zero when the build, the server
# or the tool failed (never because a figure is slow).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)

SMOKE=""
case "${1:-}" in
--smoke) SMOKE=1 ;;
"") ;;
*) echo "usage: bash bench/run.sh [--smoke]" >&2; exit 2 ;;
esac

BACKEND=${BACKEND:-bbolt}
REV=${REV:-worktree}
SCENARIOS=${SCENARIOS:-rss read protocol save scale profile gobench}
PROTOCOL=${PROTOCOL:-2026-07-28}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
SLICE=${SLICE:-2s}
SIZES=${SIZES:-1KiB 64KiB 256KiB 1MiB 8MiB}
CONCURRENCY=${CONCURRENCY:-1 16 64}
SCALE_COUNTS=${SCALE_COUNTS:-10000 100000}
PROTOCOL_SIZES=${PROTOCOL_SIZES:-1KiB}
COLD_N=${COLD_N:-10000}
COLD_SIZE=${COLD_SIZE:-256KiB}
PREPARE_C=${PREPARE_C:-64}
LOG_LEVEL=${LOG_LEVEL:-info}
QUIET=${QUIET:-0.3}
QUIET_WAIT=${QUIET_WAIT:-3m}
RETRIES=${RETRIES:-2}

log() { printf 'bench/run.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

case "$BACKEND" in bbolt | s3) ;; *) die "BACKEND=$BACKEND: want bbolt or s3" ;; esac

# PIN runs a command on $CPUS (empty: anywhere).
PIN=""
if [ -n "${CPUS:-}" ]; then
	PIN="taskset -c $CPUS"
fi
if [ -n "${S3_CPUS:-}" ] && { [ "$BACKEND" != s3 ] || [ -n "${RESOURCED_TEST_S3_ENDPOINT:-}" ]; }; then
	die "S3_CPUS pins the versitygw run.sh starts: BACKEND=s3, without RESOURCED_TEST_S3_ENDPOINT"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/resourced-bench.XXXXXX")
SERVER_PID=""
STARTED_GW=""
stop_server() {
	if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
		kill "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
	fi
	SERVER_PID=""
}
cleanup() {
	local rc=$?
	stop_server
	if [ -n "$STARTED_GW" ]; then
		scripts/versitygw.sh stop || true
	fi
	if [ $rc -ne 0 ] && [ -f "$WORK/server.log" ]; then
		log "server log (last 20 lines):"
		tail -n 20 "$WORK/server.log" >&2 || true
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

if [ -n "$SMOKE" ]; then
	DURATION=3s WARMUP=500ms SLICE=1s QUIET=0
	OUT=${OUT:-$WORK/smoke.txt}
else
	mkdir -p bench/results
	OUT=${OUT:-bench/results/$(date -u +%Y-%m-%d)-$BACKEND.txt}
fi

# The server's source: the worktree, or a clean export of REV.
if [ "$REV" = worktree ]; then
	SRC=$ROOT
	COMMIT="$(git rev-parse --short HEAD 2>/dev/null || echo unknown) (worktree"
	if git diff --quiet HEAD 2>/dev/null && [ -z "$(git ls-files --others --exclude-standard -- ':!bench' 2>/dev/null)" ]; then
		COMMIT="$COMMIT, clean)"
	else
		COMMIT="$COMMIT with uncommitted changes)"
	fi
else
	SRC=$WORK/src
	mkdir -p "$SRC"
	git archive "$REV" | tar -x -C "$SRC"
	COMMIT="$(git rev-parse --short "$REV^{commit}") (clean export of $REV; the load tool from the worktree)"
fi

# BIN_CACHE keeps a REV's binaries by commit (bench/ of the worktree is in
# them too, so the key also has a hash of it).
CACHED=""
if [ -n "${BIN_CACHE:-}" ] && [ "$REV" != worktree ]; then
	CACHED="$BIN_CACHE/$(git rev-parse "$REV^{commit}")-$(tar -cf - --sort=name --mtime=@0 --exclude=results bench | sha256sum | cut -c1-12)"
fi
if [ -n "$CACHED" ] && [ -x "$CACHED/resourced" ] && [ -x "$CACHED/resourced-bench" ] && [ -x "$CACHED/benchsvg" ]; then
	log "binaries of $COMMIT from $CACHED"
	cp "$CACHED/resourced" "$CACHED/resourced-bench" "$CACHED/benchsvg" "$WORK/"
else
	log "building resourced and resourced-bench from $COMMIT"
	# The load tool is the worktree's for every REV: one tool measures both
	# revisions, and it may use store code an old REV lacks (-prepare-s3).
	(cd "$SRC" && go build -o "$WORK/resourced" ./cmd/resourced) &&
		(cd "$ROOT" && go build -o "$WORK/resourced-bench" ./bench/cmd/resourced-bench && go build -o "$WORK/benchsvg" ./bench/cmd/benchsvg)
	if [ -n "$CACHED" ]; then
		mkdir -p "$CACHED"
		cp "$WORK/resourced" "$WORK/resourced-bench" "$WORK/benchsvg" "$CACHED/"
	fi
fi
SERVER="$WORK/resourced"
TOOL="$WORK/resourced-bench"

# port_free PORT succeeds when nothing accepts connections on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# random_port prints a port below the kernel's ephemeral range, so that an
# outgoing connection (the load tool's, versitygw's) cannot take it between
# the check and resourced's bind.
EPHEMERAL_LOW=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
[ "$EPHEMERAL_LOW" -gt 11000 ] 2>/dev/null || EPHEMERAL_LOW=32768
random_port() { echo $((10000 + RANDOM % (EPHEMERAL_LOW - 10000))); }
PORT=""
for _ in $(seq 1 50); do
	p=$(random_port)
	if port_free "$p"; then PORT=$p; break; fi
done
[ -n "$PORT" ] || die "no free port found"

STORE_YAML="store:
  backend: bbolt"
if [ "$BACKEND" = s3 ]; then
	if [ -z "${RESOURCED_TEST_S3_ENDPOINT:-}" ]; then
		eval "$(scripts/versitygw.sh start)"
		STARTED_GW=1
		if [ -n "${S3_CPUS:-}" ]; then
			taskset -a -p -c "$S3_CPUS" "$VERSITYGW_PID" >/dev/null || die "taskset $S3_CPUS on versitygw failed"
		fi
	fi
	S3_PREFIX=bench-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
	STORE_YAML="store:
  backend: s3
  s3:
    bucket: ${RESOURCED_TEST_S3_BUCKET:-resourced-test}
    prefix: $S3_PREFIX
    region: ${AWS_REGION:-us-east-1}
    endpoint: $RESOURCED_TEST_S3_ENDPOINT
    pathStyle: true"
	if [ -n "${S3_READ_CACHE:-}" ]; then
		STORE_YAML="$STORE_YAML
    readCache: $S3_READ_CACHE"
	fi
fi

DATA=${DATA_DIR:-$WORK/data}
mkdir -p "$DATA"
DATA=$(cd "$DATA" && pwd)

# The config: loopback, JWT auth with the dev key the first start creates in
# dataDir, baseURL equal to the listen address (the tokens' iss and aud).
cat >"$WORK/resourced-abuse.yaml" <<EOF
listen: 127.0.0.1:$PORT
baseURL: http://127.0.0.1:$PORT
dataDir: $DATA
logLevel: $LOG_LEVEL
$STORE_YAML
EOF
# The capacity scenarios (read, save, scale, ...) measure what the server
# can do for one client, so the per-tenant save rate and in-flight cap,
# which bound what one tenant may take of a shared server, are off; the
# abuse scenarios run with the defaults (resourced-abuse.yaml): those are
# what they test.
# (A REV from before the budgets has no such section, and no such limits.)
cp "$WORK/resourced-abuse.yaml" "$WORK/resourced.yaml"
if grep -q 'yaml:"budgets"' "$SRC/config/config.go"; then
	echo 'budgets: {tenantSaveRate: -1, tenantInflight: -1}' >>"$WORK/resourced.yaml"
fi
# ABUSE_BUDGETS, when set, is a budgets section for the abuse server, e.g.
# "{writeMinRate: 1MiB, writeGrace: 10s}" to see non-readers dropped sooner.
if [ -n "${ABUSE_BUDGETS:-}" ]; then
	echo "budgets: $ABUSE_BUDGETS" >>"$WORK/resourced-abuse.yaml"
fi
if [ -n "${INDEX:-}" ] && grep -q 'yaml:"index"' "$SRC/config/config.go"; then
	printf 'index: {backend: %s}\n' "$INDEX" | tee -a "$WORK/resourced-abuse.yaml" >>"$WORK/resourced.yaml"
fi
if [ -n "${CACHE:-}" ] && grep -q 'yaml:"cache"' "$SRC/config/config.go"; then
	printf 'cache: {maxBytes: %s}\n' "$CACHE" | tee -a "$WORK/resourced-abuse.yaml" >>"$WORK/resourced.yaml"
fi
if [ -n "${GC_HEADROOM:-}" ] && grep -q 'yaml:"gcHeadroom"' "$SRC/config/config.go"; then
	printf 'gcHeadroom: %s\n' "$GC_HEADROOM" | tee -a "$WORK/resourced-abuse.yaml" >>"$WORK/resourced.yaml"
fi
SERVER_CONFIG="$WORK/resourced.yaml"
URL="http://127.0.0.1:$PORT/mcp"

# ready [PORT] reports whether the server on PORT (default $PORT) answers
# GET /readyz with 200 (bash's /dev/tcp: no curl needed).
ready() {
	local status port=${1:-$PORT}
	{ exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null || return 1
	printf 'GET /readyz HTTP/1.0\r\nHost: 127.0.0.1:%s\r\n\r\n' "$port" >&3
	IFS= read -r -t 5 status <&3 || status=""
	exec 3<&- 3>&-
	[[ $status == *" 200 "* ]]
}

start_server() {
	: >"$WORK/server.log"
	$PIN "$SERVER" serve --config "$SERVER_CONFIG" >>"$WORK/server.stdout" 2>"$WORK/server.log" &
	SERVER_PID=$!
	# Ready when /readyz answers 200 (the log says "listening" only at
	# LOG_LEVEL info or debug).
	for _ in $(seq 1 300); do
		ready && return 0
		kill -0 "$SERVER_PID" 2>/dev/null || die "resourced exited before it was ready"
		sleep 0.1
	done
	die "resourced did not answer /readyz within 30 s"
}

log "starting resourced ($BACKEND) on 127.0.0.1:$PORT"
start_server
RESOURCED_TOKEN=$("$SERVER" token --config "$WORK/resourced.yaml" --ttl 24h)
# A second tenant, for the abuse scenarios where one tenant disturbs another.
RESOURCED_TOKEN_B=$("$SERVER" token --config "$WORK/resourced.yaml" --ttl 24h --tenant bench-b)
export RESOURCED_TOKEN RESOURCED_TOKEN_B

{
	echo "# resourced-bench results"
	echo "date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "commit:   $COMMIT"
	echo "machine:  $(nproc) cores ($(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)), $(free -h | awk '/^Mem:/ {print $2}') memory, kernel $(uname -r)"
	echo "go:       $(go version)"
	echo "backend:  $BACKEND; auth: jwt (HS256 dev key); logLevel: $LOG_LEVEL; protocol: $PROTOCOL; index: ${INDEX:-default}; cache: ${CACHE:-default}; gcHeadroom: ${GC_HEADROOM:-default}"
	echo "load:     ${DURATION} measured per target after ${WARMUP} warmup; ceiling alternated in ${SLICE} slices"
	echo "noise:    quiet threshold ${QUIET} cores, ${RETRIES} retries; the load generator shares the cores with the server"
	echo "pinning:  resourced and the load tool on CPUs ${CPUS:-any}; versitygw on CPUs ${S3_CPUS:-any}"
	echo "limits:   open files $(ulimit -Sn) soft, $(ulimit -Hn) hard (the server and the tool inherit them)"
	echo
} >"$OUT"

# bench LABEL ARGS... runs the tool once, recording the exact command and its output.
bench() {
	local label=$1
	shift
	local cmd=("$TOOL" -url "$URL" -protocol "$PROTOCOL" -d "$DURATION" -warmup "$WARMUP" -slice "$SLICE"
		-pid "$SERVER_PID" -quiet "$QUIET" -quiet-wait "$QUIET_WAIT" -retries "$RETRIES" -md "$label" "$@")
	log "$label"
	{
		echo "## $label"
		echo "loadavg before: $(cut -d' ' -f1-3 /proc/loadavg)"
		echo "\$ RESOURCED_TOKEN=… resourced-bench $(printf '%q ' "${cmd[@]:1}")"
	} >>"$OUT"
	local rc
	set +e
	$PIN "${cmd[@]}" 2>&1 | tee -a "$OUT" >&2
	rc=${PIPESTATUS[0]}
	set -e
	echo >>"$OUT"
	[ "$rc" -eq 0 ] || die "resourced-bench failed (exit $rc) in scenario: $label"
}

# abuse SCENARIO ARGS... runs one abuse scenario against the running server,
# recording the command, its output, what the server logged about running out
# of file descriptors, and whether the server survived it. It fails only when
# the tool could not run the scenario.
abuse() {
	local name=$1
	shift
	local var="ABUSE_ARGS_${name//-/_}"
	# shellcheck disable=SC2086 # the *_ARGS are lists of flags
	local cmd=("$TOOL" abuse "$name" -url "$URL" -protocol "$PROTOCOL" -pid "$SERVER_PID" "$@" ${ABUSE_ARGS:-} ${!var:-})
	log "abuse $name"
	{
		echo "## abuse $name"
		echo "loadavg before: $(cut -d' ' -f1-3 /proc/loadavg)"
		echo "\$ RESOURCED_TOKEN=… RESOURCED_TOKEN_B=… resourced-bench $(printf '%q ' "${cmd[@]:1}")"
	} >>"$OUT"
	local logged rc
	logged=$(wc -l <"$WORK/server.log")
	set +e
	"${cmd[@]}" 2>&1 | tee -a "$OUT" >&2
	rc=${PIPESTATUS[0]}
	set -e
	{
		echo "server log during it: $(tail -n +$((logged + 1)) "$WORK/server.log" | grep -c 'too many open files' || true) lines saying \"too many open files\""
		if kill -0 "$SERVER_PID" 2>/dev/null; then
			echo "server: still running"
		else
			local st=0
			wait "$SERVER_PID" 2>/dev/null || st=$?
			echo "server: EXITED during the scenario (status $st); last log lines:"
			tail -n 5 "$WORK/server.log"
			SERVER_PID=""
		fi
		echo
	} >>"$OUT"
	[ "$rc" -eq 0 ] || die "resourced-bench abuse $name failed (exit $rc)"
	[ -n "$SERVER_PID" ] || start_server
}

ABUSE_ALL="slowbody noread listen noisy-tenant timing query uploads"

# free_port EXCLUDED... prints a free port that is none of EXCLUDED.
free_port() {
	local p
	for _ in $(seq 1 100); do
		p=$(random_port)
		if port_free "$p" && [[ " $* " != *" $p "* ]]; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# start_gateway DIR PORT [UPSTREAM_PID UPSTREAM_LOG] starts `resourced
# gateway` on DIR/gateway.yaml and waits until it answers /readyz on PORT
# (every required upstream reached) and, with an upstream, until that one
# logged "listening on port"; GW_PID is its process. It fails, with the
# logs' last lines and the gateway stopped, when either exits first or 30 s
# pass.
start_gateway() {
	local dir=$1 port=$2 uppid=${3:-} uplog=${4:-}
	"$SERVER" gateway --config "$dir/gateway.yaml" </dev/null >"$dir/gateway.stdout" 2>"$dir/gateway.log" &
	GW_PID=$!
	for _ in $(seq 1 300); do
		if { [ -z "$uplog" ] || grep -q "listening on port" "$uplog" 2>/dev/null; } && ready "$port"; then
			return 0
		fi
		kill -0 "$GW_PID" 2>/dev/null || break
		[ -z "$uppid" ] || kill -0 "$uppid" 2>/dev/null || break
		sleep 0.1
	done
	tail -n 5 ${uplog:+"$uplog"} "$dir/gateway.log" >&2 || true
	kill "$GW_PID" 2>/dev/null || true
	return 1
}

# gateway_bench LABEL N LARGE_N starts server-everything (Streamable HTTP on
# 127.0.0.1, held there by the loopback preload) and `resourced gateway`
# (auth none, its own data directory) fronting it and server-filesystem,
# runs `resourced-bench gateway` against both, records it, and stops both.
gateway_bench() {
	local label=$1 n=$2 large_n=$3
	local up="$ROOT/integration/upstreams"
	local ev="$up/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
	local fsrv="$up/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
	if [ ! -f "$ev" ] || [ ! -f "$fsrv" ]; then
		die "scenario gateway: integration/upstreams is not installed (npm ci --prefix integration/upstreams)"
	fi
	local evport gwport
	evport=$(free_port "$PORT") && gwport=$(free_port "$PORT" "$evport") || die "no free ports for the gateway scenario"
	rm -rf "$WORK/gw"
	mkdir -p "$WORK/gw/files"
	# A 2 MB log (2097152 bytes of ASCII lines).
	# (yes in a process substitution: its SIGPIPE must not fail the pipeline.)
	head -c 2097152 < <(yes "2026-07-01T00:00:00Z level=info component=bench-gateway msg=\"one line of a large log\"") \
		>"$WORK/gw/files/big.log"
	PORT="$evport" node --import "$up/loopback.mjs" "$ev" streamableHttp </dev/null >"$WORK/gw/everything.log" 2>&1 &
	local evpid=$!
	cat >"$WORK/gw/gateway.yaml" <<EOF
listen: 127.0.0.1:$gwport
dataDir: $WORK/gw/data
logLevel: $LOG_LEVEL
auth:
  mode: none
gateway:
  upstreams:
    - name: everything
      url: http://127.0.0.1:$evport/mcp
    - name: fs
      command: node
      args: ["$fsrv", "$WORK/gw/files"]
EOF
	start_gateway "$WORK/gw" "$gwport" "$evpid" "$WORK/gw/everything.log" || {
		kill "$evpid" 2>/dev/null || true
		die "scenario gateway: server-everything or resourced gateway did not start"
	}
	local gwpid=$GW_PID
	# With two upstreams the gateway namespaces their tools (docs/gateway.md).
	local cmd=("$TOOL" gateway -gateway "http://127.0.0.1:$gwport/mcp" -direct "http://127.0.0.1:$evport/mcp"
		-protocol "$PROTOCOL" -tool echo -gateway-tool everything__echo -large-tool fs__read_text_file
		-n "$n" -large-n "$large_n" -fs-command node -fs-args "$fsrv $WORK/gw/files" -file "$WORK/gw/files/big.log")
	# The floor of one extra hop: a plain reverse proxy beside the gateway
	# (the load tool is the worktree's for every REV, so both sides have it).
	cmd+=(-proxy-floor)
	log "$label"
	{
		echo "## $label"
		echo "loadavg before: $(cut -d' ' -f1-3 /proc/loadavg)"
		echo "\$ resourced-bench $(printf '%q ' "${cmd[@]:1}")"
	} >>"$OUT"
	local rc
	set +e
	"${cmd[@]}" 2>&1 | tee -a "$OUT" >&2
	rc=${PIPESTATUS[0]}
	set -e
	echo >>"$OUT"
	kill "$gwpid" "$evpid" 2>/dev/null || true
	wait "$gwpid" 2>/dev/null || true
	wait "$evpid" 2>/dev/null || true
	[ "$rc" -eq 0 ] || die "resourced-bench gateway failed (exit $rc) in scenario: $label"
}

# gwmem_bench starts `resourced gateway` (auth none, its own data directory)
# fronting server-filesystem over stdio, writes text files with what JSON
# must escape in them, and runs `resourced-bench gwmemory` against it.
gwmem_bench() {
	local fsrv="$ROOT/integration/upstreams/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
	[ -f "$fsrv" ] || die "scenario gateway-memory: integration/upstreams is not installed (npm ci --prefix integration/upstreams)"
	local gwport
	gwport=$(free_port "$PORT") || die "no free port for the gateway-memory scenario"
	rm -rf "$WORK/gwm"
	mkdir -p "$WORK/gwm/files"
	local sizes=(${GWMEM_SIZES_MIB:-40 100 30}) files=() f mib
	for mib in "${sizes[@]}"; do
		f="$WORK/gwm/files/text-$mib.txt"
		# (yes in a process substitution: its SIGPIPE must not fail the pipeline.)
		head -c $((mib << 20)) < <(yes 'line "quoted" back\slash	tab <a & b> é ✓ xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx') >"$f"
		files+=("$f")
	done
	cat >"$WORK/gwm/gateway.yaml" <<EOF
listen: 127.0.0.1:$gwport
dataDir: $WORK/gwm/data
logLevel: $LOG_LEVEL
auth:
  mode: none
gateway:
  upstreams:
    - name: fs
      command: node
      args: ["$fsrv", "$WORK/gwm/files"]
EOF
	start_gateway "$WORK/gwm" "$gwport" || die "scenario gateway-memory: resourced gateway did not start"
	local gwpid=$GW_PID
	local last=$((${#files[@]} - 1)) seq_files
	seq_files=$(IFS=,; echo "${files[*]:0:$last}")
	local cmd=("$TOOL" gwmemory -gateway "http://127.0.0.1:$gwport/mcp" -pid "$gwpid" -protocol "$PROTOCOL"
		-files "$seq_files" -concurrent-file "${files[$last]}" -concurrent 4)
	log "gateway-memory: ${sizes[*]} MiB"
	{
		echo "## gateway-memory: read_text_file of ${sizes[*]:0:$last} MiB one at a time, then 4 x ${sizes[$last]} MiB at once"
		echo "loadavg before: $(cut -d' ' -f1-3 /proc/loadavg)"
		echo "\$ resourced-bench $(printf '%q ' "${cmd[@]:1}")"
	} >>"$OUT"
	local rc
	set +e
	"${cmd[@]}" 2>&1 | tee -a "$OUT" >&2
	rc=${PIPESTATUS[0]}
	set -e
	echo >>"$OUT"
	kill "$gwpid" 2>/dev/null || true
	wait "$gwpid" 2>/dev/null || true
	[ "$rc" -eq 0 ] || die "resourced-bench gwmemory failed (exit $rc)"
}

# gwflood_bench starts `resourced gateway` with JWT auth (its own data
# directory and dev key) fronting server-filesystem over stdio, perTenant,
# mints two tenants' tokens, and runs `resourced-bench abuse gateway-flood`:
# tenant A reads a large file at -c in a loop, tenant B a 1 KiB one.
gwflood_bench() {
	local fsrv="$ROOT/integration/upstreams/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
	[ -f "$fsrv" ] || die "scenario abuse-gateway-flood: integration/upstreams is not installed (npm ci --prefix integration/upstreams)"
	local gwport
	gwport=$(free_port "$PORT") || die "no free port for the gateway-flood scenario"
	rm -rf "$WORK/gwf"
	mkdir -p "$WORK/gwf/files"
	# (yes in a process substitution: its SIGPIPE must not fail the pipeline.)
	head -c $((${GWFLOOD_MIB:-30} << 20)) < <(yes 'line "quoted" back\slash	tab <a & b> é ✓ xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx') >"$WORK/gwf/files/large.txt"
	head -c 1024 < <(yes 'a small file of tenant B') >"$WORK/gwf/files/small.txt"
	cat >"$WORK/gwf/gateway.yaml" <<EOF
listen: 127.0.0.1:$gwport
baseURL: http://127.0.0.1:$gwport
dataDir: $WORK/gwf/data
logLevel: $LOG_LEVEL
gateway:
  ${GWFLOOD_MAX_IN_FLIGHT:+maxBytesInFlight: $GWFLOOD_MAX_IN_FLIGHT}
  ${GWFLOOD_MAX_TENANT_IN_FLIGHT:+maxTenantBytesInFlight: $GWFLOOD_MAX_TENANT_IN_FLIGHT}
  upstreams:
    - name: fs
      command: node
      args: ["$fsrv", "$WORK/gwf/files"]
      isolation: perTenant
EOF
	start_gateway "$WORK/gwf" "$gwport" || die "scenario abuse-gateway-flood: resourced gateway did not start"
	local gwpid=$GW_PID ta tb
	ta=$("$SERVER" token --config "$WORK/gwf/gateway.yaml" --ttl 24h --tenant flood-a) &&
		tb=$("$SERVER" token --config "$WORK/gwf/gateway.yaml" --ttl 24h --tenant flood-b) ||
		die "scenario abuse-gateway-flood: no tokens"
	# shellcheck disable=SC2086 # the *_ARGS are lists of flags
	local cmd=("$TOOL" abuse gateway-flood -url "http://127.0.0.1:$gwport/mcp" -protocol "$PROTOCOL" -pid "$gwpid"
		-large-file "$WORK/gwf/files/large.txt" -small-file "$WORK/gwf/files/small.txt" ${ABUSE_ARGS:-} ${ABUSE_ARGS_gateway_flood:-})
	log "abuse gateway-flood"
	{
		echo "## abuse gateway-flood"
		echo "loadavg before: $(cut -d' ' -f1-3 /proc/loadavg)"
		echo "\$ RESOURCED_TOKEN=… RESOURCED_TOKEN_B=… resourced-bench $(printf '%q ' "${cmd[@]:1}")"
	} >>"$OUT"
	local rc
	set +e
	RESOURCED_TOKEN=$ta RESOURCED_TOKEN_B=$tb "${cmd[@]}" 2>&1 | tee -a "$OUT" >&2
	rc=${PIPESTATUS[0]}
	set -e
	echo "loadavg after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT"
	echo >>"$OUT"
	kill "$gwpid" 2>/dev/null || true
	wait "$gwpid" 2>/dev/null || true
	[ "$rc" -eq 0 ] || die "resourced-bench abuse gateway-flood failed (exit $rc)"
}

# The saves' write ceiling keeps its database beside the server's data
# directory: the same disk. It is bbolt's group commit, so on S3 the saves
# run without it (s3save compares them with S3 itself).
wc=(-ceiling -ceiling-dir "$WORK/ceiling")
vs=" vs write ceiling"
if [ "$BACKEND" = s3 ]; then
	wc=() vs=""
fi

# draw_svg draws the ratio tables of $COMPARE and $OUT as ${OUT%.txt}.svg.
draw_svg() {
	local svg=${OUT%.txt}.svg
	# shellcheck disable=SC2086 # COMPARE is a list of files
	"$WORK/benchsvg" -if-any -o "$svg" ${COMPARE:-} "$OUT" || die "benchsvg failed"
	[ ! -f "$svg" ] || log "ratios drawn: $svg"
}

if [ -n "$SMOKE" ]; then
	bench "smoke read 1KiB c=16" -op read -size 1KiB -c 16 -ceiling
	bench "smoke save 1KiB c=16$vs" -op save -size 1KiB -c 16 -d 2s "${wc[@]}"
	draw_svg
	stop_server
	SERVER_CONFIG="$WORK/resourced-abuse.yaml"
	start_server
	for a in $ABUSE_ALL; do
		abuse "$a" -smoke
	done
	gateway_bench "smoke gateway" 50 1
	log "smoke passed"
	exit 0
fi

other_protocol=2025-11-25
[ "$PROTOCOL" = 2025-11-25 ] && other_protocol=2026-07-28

for scenario in $SCENARIOS; do
	case "$scenario" in
	rss)
		# A fresh process, measured once (no retries), so that its peak is
		# this load's and not an earlier one's.
		stop_server
		start_server
		bench "rss read 8MiB c=16" -op read -size 8MiB -c 16 -retries 0
		;;
	read)
		for size in $SIZES; do
			for c in $CONCURRENCY; do
				bench "read $size c=$c" -op read -size "$size" -c "$c" -ceiling ${CEILING_PROCESS:+-ceiling-process}
			done
		done
		;;
	s3read)
		[ "$BACKEND" = s3 ] || die "scenario s3read needs BACKEND=s3"
		for size in 1KiB 256KiB; do
			bench "s3 read $size c=16 vs direct GET" -op read -size "$size" -c 16 \
				-s3-direct "$RESOURCED_TEST_S3_ENDPOINT" -s3-bucket "${RESOURCED_TEST_S3_BUCKET:-resourced-test}" -s3-prefix "$S3_PREFIX"
		done
		;;
	s3save)
		[ "$BACKEND" = s3 ] || die "scenario s3save needs BACKEND=s3"
		bench "s3 save_report 1KiB c=16 vs direct PUT" -op save -tool save_report -size 1KiB -c 16 \
			-s3-direct "$RESOURCED_TEST_S3_ENDPOINT" -s3-bucket "${RESOURCED_TEST_S3_BUCKET:-resourced-test}" -s3-prefix "$S3_PREFIX"
		;;
	protocol)
		for size in $PROTOCOL_SIZES; do
			bench "read $size c=16 ($other_protocol)" -op read -size "$size" -c 16 -ceiling ${CEILING_PROCESS:+-ceiling-process} -protocol "$other_protocol"
		done
		;;
	cold)
		# Saved once per data directory (DATA_DIR): a later run reads the
		# same reports (-prepare-from N saves none of them again).
		marker="$DATA/.bench-cold-$COLD_N-$COLD_SIZE-$BACKEND"
		from=0
		[ ! -f "$marker" ] || from=$COLD_N
		bench "cold read $COLD_SIZE c=16 among $COLD_N" -op read -size "$COLD_SIZE" -c 16 -ceiling \
			-prepare "$COLD_N" -prepare-from "$from" -prepare-c "$PREPARE_C" -prefix bench/cold
		[ "$BACKEND" != bbolt ] || touch "$marker"
		;;
	save)
		bench "save_search_snapshot 1KiB c=16$vs" -op save -tool save_search_snapshot -size 1KiB -c 16 "${wc[@]}"
		for c in ${SAVE_CONCURRENCY:-16 64}; do
			bench "save_report 1KiB c=$c$vs" -op save -tool save_report -size 1KiB -c "$c" "${wc[@]}"
		done
		;;
	scale)
		from=0
		for n in $SCALE_COUNTS; do
			bench "scale read 1KiB c=16 among $n" -op read -size 1KiB -c 16 -ceiling \
				-prepare "$n" -prepare-from "$from" -prepare-c "$PREPARE_C" -prefix bench/scale
			# A page of list_resources (100 items) at a random place among them.
			bench "scale list 100 c=16 among $n" -op list -keys "$n" -c 16 -prefix bench/scale
			from=$n
		done
		;;
	profile)
		log "CPU profiles of an in-process server (bbolt, jwt) under 1 KiB and 256 KiB reads at c=16"
		secs=${DURATION%s}
		(cd "$SRC" && RESOURCED_BENCH_PROFILE="$WORK/prof" RESOURCED_BENCH_PROFILE_SECONDS="${secs%%.*}" \
			go test ./bench -run TestProfileRead -count=1 -v) >"$WORK/prof.log" 2>&1 || {
			cat "$WORK/prof.log" >&2
			die "profile test failed"
		}
		for size in 1KiB 256KiB; do
			{
				echo "## CPU profile: read $size c=16 (in-process server on bbolt, jwt; go tool pprof -top)"
				awk -v t="TestProfileRead/$size" '$0 ~ "=== RUN" { on = index($0, t) > 0 } on && /^ +(target|server) /' "$WORK/prof.log"
				go tool pprof -top -nodecount=25 "$WORK/prof/read-$size.cpu.prof" 2>/dev/null
				echo
				echo "## CPU profile: read $size c=16, cumulative (go tool pprof -top -cum)"
				go tool pprof -top -cum -nodecount=40 "$WORK/prof/read-$size.cpu.prof" 2>/dev/null | sed -n '/flat%/,$p'
				echo
			} >>"$OUT"
		done
		;;
	floor)
		# The raw floor of issue 18 item 3: 16 goroutines of fsynced 1 KiB
		# puts into bbolt through the same group commit, no MCP (and
		# DB.Batch, and the store's Put, for comparison).
		log "raw bbolt floor: go test ./store/boltstore -bench 'RawGroupCommit|RawBoltBatch|StorePut\$'"
		echo "## Raw bbolt floor (go test ./store/boltstore -run '^\$' -bench 'RawGroupCommit|RawBoltBatch|StorePut\$' -benchtime 4s)" >>"$OUT"
		(cd "$SRC" && go test ./store/boltstore -run '^$' -bench 'RawGroupCommit|RawBoltBatch|StorePut$' -benchtime 4s -count 1) >>"$OUT" 2>&1 || die "floor benchmarks failed"
		echo >>"$OUT"
		;;
	gobench)
		log "Go benchmarks of the hot paths"
		echo "## Go benchmarks (go test ./bench -run '^\$' -bench . -benchmem)" >>"$OUT"
		(cd "$SRC" && go test ./bench -run '^$' -bench . -benchmem -count 1) >>"$OUT" 2>&1 || die "Go benchmarks failed"
		echo >>"$OUT"
		;;
	gateway)
		for gp in ${GATEWAY_PROTOCOLS:-$PROTOCOL $other_protocol}; do
			PROTOCOL=$gp gateway_bench "gateway: echo pass-through and a 2 MB read_text_file ($gp)" "${GATEWAY_N:-1000}" 5
		done
		;;
	gateway-memory)
		gwmem_bench
		;;
	abuse-gateway-flood)
		gwflood_bench
		;;
	abuse | abuse-*)
		list=${scenario#abuse-}
		[ "$scenario" = abuse ] && list=$ABUSE_ALL
		SERVER_CONFIG="$WORK/resourced-abuse.yaml"
		for a in $list; do
			# A fresh process for each, so that its idle figures are its own.
			stop_server
			start_server
			abuse "$a"
		done
		stop_server
		SERVER_CONFIG="$WORK/resourced.yaml"
		start_server
		;;
	*) die "unknown scenario $scenario (want rss read protocol cold save scale profile gobench floor gateway gateway-memory abuse abuse-<name>)" ;;
	esac
done

rows=$(grep '^| ' "$OUT" || true)
if [ -n "$rows" ]; then
	{
		echo "## summary"
		"$TOOL" -md-header
		printf '%s\n' "$rows"
	} >>"$OUT"
fi
draw_svg
log "done: $OUT"
