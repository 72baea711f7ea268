#!/usr/bin/env bash
# seaweedfs.sh starts and stops a throw-away SeaweedFS (`weed mini`: master,
# volume server, filer and S3 gateway in one process) on loopback, the
# second S3 implementation the S3 tests run on (docs/s3.md).
#
#   eval "$(scripts/seaweedfs.sh start)"   # stdout is export lines only
#   go test ./store/s3store
#   scripts/seaweedfs.sh stop              # reads SEAWEEDFS_PID, SEAWEEDFS_DIR
#   scripts/seaweedfs.sh build             # only build (or find) the binary
#
# The exports are the names scripts/versitygw.sh gives (RESOURCED_TEST_S3_*,
# AWS_*), with RESOURCED_TEST_S3_KIND=seaweedfs: the S3 tests run on
# whichever was started last (.ci/run runs them once per server).
#
# The binary is built once from the Go module proxy at a pinned version
# (go install refuses the module: its go.mod has a replace directive):
# `go mod download`, a writable copy, `go build ./weed`, cached as
# ${XDG_CACHE_HOME:-~/.cache}/resourced/weed-$VERSION. start generates
# fresh root keys (nothing is committed), writes them to an S3 identity
# file (0600) in a temporary directory with the data and the log, picks
# free 127.0.0.1 ports for every service (the admin server starts even
# with -admin.ui=false), waits until S3 answers and the bucket exists. Everything but the export lines goes to stderr.
set -euo pipefail

readonly MODULE=github.com/seaweedfs/seaweedfs
readonly VERSION=v0.0.0-20261109003541-7506e5f91cd6
readonly BUCKET=resourced-test
readonly MARKER=.seaweedfs-sh # marks a directory this script created

log() { printf 'seaweedfs.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
# shellcheck source=lib/service.sh
. "$(dirname "$0")/lib/service.sh"

usage() {
	cat >&2 <<'EOF'
usage: eval "$(scripts/seaweedfs.sh start)"
       scripts/seaweedfs.sh stop
       scripts/seaweedfs.sh build
EOF
	exit 2
}

cache_bin() {
	printf '%s/resourced/weed-%s\n' "${XDG_CACHE_HOME:-$HOME/.cache}" "$VERSION"
}

# find_bin prints the path of the weed binary, building it if needed.
find_bin() {
	local bin src dir start
	bin="$(cache_bin)"
	if [ -x "$bin" ]; then
		printf '%s\n' "$bin"
		return
	fi
	command -v go >/dev/null 2>&1 || die "go is not installed: cannot build weed"
	log "building weed from $MODULE@$VERSION (about 13 min of CPU, once; cached as $bin)"
	start=$SECONDS
	dir="$(go mod download -json "$MODULE@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
	[ -n "$dir" ] && [ -d "$dir" ] || die "go mod download $MODULE@$VERSION gave no directory"
	src="$(mktemp -d "${TMPDIR:-/tmp}/weed-src.XXXXXX")"
	cp -r "$dir/." "$src/"
	chmod -R u+w "$src"
	mkdir -p "$(dirname "$bin")"
	# Two builds at once (two CI runs on one machine) each link a file of
	# their own and rename it into place: the cache never holds half a binary.
	# No debug information (-dwarf=false, -s -w): nobody debugs this binary,
	# and writing DWARF for ~1 500 packages and a 230 MB link is CPU a fresh
	# CI machine needs elsewhere.
	if ! (cd "$src" && go build -trimpath -gcflags=all=-dwarf=false -ldflags='-s -w' -o "$bin.tmp.$$" ./weed) >&2; then
		rm -rf "$src" "$bin.tmp.$$"
		die "go build ./weed failed"
	fi
	rm -rf "$src"
	mv "$bin.tmp.$$" "$bin"
	log "built $bin in $((SECONDS - start)) s"
	printf '%s\n' "$bin"
}

# bucket_ready ENDPOINT succeeds once a signed HEAD of the bucket answers
# 200 (the python3 standard library signs it, as the tests' SDK would).
bucket_ready() {
	python3 - "$1" "$BUCKET" <<'PY' 2>/dev/null
import datetime, hashlib, hmac, os, sys, urllib.request
endpoint, bucket = sys.argv[1], sys.argv[2]
ak, sk = os.environ["SW_ACCESS"], os.environ["SW_SECRET"]
host = endpoint.split("//", 1)[1]
now = datetime.datetime.now(datetime.timezone.utc)
amz, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
ph = hashlib.sha256(b"").hexdigest()
canon = f"HEAD\n/{bucket}\n\nhost:{host}\nx-amz-content-sha256:{ph}\nx-amz-date:{amz}\n\nhost;x-amz-content-sha256;x-amz-date\n{ph}"
scope = f"{day}/us-east-1/s3/aws4_request"
sts = f"AWS4-HMAC-SHA256\n{amz}\n{scope}\n" + hashlib.sha256(canon.encode()).hexdigest()
k = ("AWS4" + sk).encode()
for part in (day, "us-east-1", "s3", "aws4_request"):
    k = hmac.new(k, part.encode(), hashlib.sha256).digest()
sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
req = urllib.request.Request(f"{endpoint}/{bucket}", method="HEAD", headers={
    "x-amz-date": amz, "x-amz-content-sha256": ph,
    "Authorization": f"AWS4-HMAC-SHA256 Credential={ak}/{scope}, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature={sig}"})
sys.exit(0 if urllib.request.urlopen(req, timeout=2).status == 200 else 1)
PY
}

start() {
	local bin dir access secret pid ready ports
	bin="$(find_bin)"
	dir="$(mktemp -d "${TMPDIR:-/tmp}/seaweedfs.XXXXXX")"
	touch "$dir/$MARKER"
	mkdir -p "$dir/data"
	access="$(randhex 10)"
	secret="$(randhex 20)"
	(
		umask 077
		cat >"$dir/s3.json" <<EOF
{"identities": [{"name": "resourced-test", "credentials": [{"accessKey": "$access", "secretKey": "$secret"}],
  "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
EOF
	)
	local attempt s3=""
	for attempt in 1 2 3 4 5; do
		mapfile -t ports < <(free_ports 10)
		local master=${ports[0]} master_grpc=${ports[1]} volume=${ports[2]} volume_grpc=${ports[3]}
		local filer=${ports[4]} filer_grpc=${ports[5]} s3_grpc=${ports[7]} admin=${ports[8]} admin_grpc=${ports[9]}
		s3=${ports[6]}
		log "starting $bin mini on 127.0.0.1 (S3 port $s3, data $dir/data, log $dir/weed.log)"
		nohup "$bin" mini -dir="$dir/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
			-master.port="$master" -master.port.grpc="$master_grpc" -master.telemetry=false \
			-volume.port="$volume" -volume.port.grpc="$volume_grpc" \
			-filer.port="$filer" -filer.port.grpc="$filer_grpc" -filer.localSocket="$dir/filer.sock" \
			-s3.port="$s3" -s3.port.grpc="$s3_grpc" -s3.port.iceberg=0 -s3.port.lance=0 -s3.localSocket="$dir/s3.sock" \
			-s3.config="$dir/s3.json" -bucket="$BUCKET" \
			-webdav=false -admin.ui=false -admin.port="$admin" -admin.port.grpc="$admin_grpc" -admin.port.legacy=0 \
			</dev/null >>"$dir/weed.log" 2>&1 &
		pid=$!
		ready=0
		SW_ACCESS="$access" SW_SECRET="$secret" wait_ready "$pid" 120 bucket_ready "http://127.0.0.1:$s3" || ready=$?
		[ "$ready" = 0 ] && break
		if [ "$ready" = 2 ]; then
			kill "$pid" 2>/dev/null || true
			tail -n 30 "$dir/weed.log" >&2 || true
			rm -rf "$dir"
			die "weed mini (pid $pid) did not serve bucket $BUCKET on 127.0.0.1:$s3 within 120 s"
		fi
		log "weed mini exited early (attempt $attempt); log:"
		tail -n 5 "$dir/weed.log" >&2 || true
		pid=""
	done
	if [ -z "$pid" ]; then
		rm -rf "$dir"
		die "SeaweedFS did not start"
	fi
	log "SeaweedFS $VERSION is up (pid $pid); bucket $BUCKET"
	printf 'export %s=%q\n' \
		RESOURCED_TEST_S3_ENDPOINT "http://127.0.0.1:$s3" \
		RESOURCED_TEST_S3_BUCKET "$BUCKET" \
		RESOURCED_TEST_S3_KIND seaweedfs \
		AWS_ACCESS_KEY_ID "$access" \
		AWS_SECRET_ACCESS_KEY "$secret" \
		AWS_REGION us-east-1 \
		SEAWEEDFS_PID "$pid" \
		SEAWEEDFS_DIR "$dir"
}

stop() {
	[ -n "${SEAWEEDFS_PID:-}" ] || [ -n "${SEAWEEDFS_DIR:-}" ] || die "SEAWEEDFS_PID and SEAWEEDFS_DIR are unset: nothing to stop"
	check_marked "${SEAWEEDFS_DIR:-}" "$MARKER"
	stop_pid "${SEAWEEDFS_PID:-}" 15
	remove_marked "${SEAWEEDFS_DIR:-}" "$MARKER"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
build) find_bin >/dev/null ;;
*) usage ;;
esac
