#!/usr/bin/env bash
# versitygw.sh starts and stops a throw-away versitygw S3 server on loopback
# for the store/s3store tests.
#
#   eval "$(scripts/versitygw.sh start)"   # stdout is export lines only
#   go test ./store/s3store
#   scripts/versitygw.sh stop              # reads VERSITYGW_PID, VERSITYGW_DIR
#
# start installs versitygw with `go install` when it is not on PATH or in
# $(go env GOPATH)/bin, generates random root keys (nothing is committed),
# creates a temporary directory with the object root, the sidecar metadata
# directory and the log, starts the server on a free 127.0.0.1 port, waits
# until it answers HTTP, and creates the test bucket. Everything but the
# export lines goes to stderr.
set -euo pipefail

readonly VERSION=v1.8.0
readonly BUCKET=resourced-test
readonly MARKER=.versitygw-sh # marks a directory this script created

log() { printf 'versitygw.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
# shellcheck source=lib/service.sh
. "$(dirname "$0")/lib/service.sh"

# xattrs_work reports whether DIR's file system takes user extended attributes.
xattrs_work() {
	python3 - "$1" <<'PY' 2>/dev/null
import os, sys, tempfile
fd, path = tempfile.mkstemp(dir=sys.argv[1])
os.close(fd)
try:
    os.setxattr(path, "user.versitygw-probe", b"1")
finally:
    os.unlink(path)
PY
}

usage() {
	cat >&2 <<'EOF'
usage: eval "$(scripts/versitygw.sh start)"
       scripts/versitygw.sh stop
       scripts/versitygw.sh install   # only the go install, when missing
EOF
	exit 2
}

# find_bin prints the path of a versitygw binary, installing it if needed.
find_bin() {
	if command -v versitygw >/dev/null 2>&1; then
		command -v versitygw
		return
	fi
	command -v go >/dev/null 2>&1 || die "versitygw is not on PATH and go is not installed"
	local gobin
	gobin="$(go env GOBIN)"
	if [ -z "$gobin" ]; then
		gobin="$(go env GOPATH)/bin"
	fi
	if [ ! -x "$gobin/versitygw" ]; then
		log "installing github.com/versity/versitygw/cmd/versitygw@$VERSION (about 5 minutes)"
		# No debug information: less CPU on a fresh machine (as seaweedfs.sh).
		go install -trimpath -gcflags=all=-dwarf=false -ldflags='-s -w' "github.com/versity/versitygw/cmd/versitygw@$VERSION" >&2
	fi
	[ -x "$gobin/versitygw" ] || die "go install did not produce $gobin/versitygw"
	printf '%s\n' "$gobin/versitygw"
}

# answers PORT succeeds when an HTTP server answers on 127.0.0.1:PORT.
answers() {
	local line
	(
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf 'GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
		IFS= read -r -t 2 line <&3 || exit 1
		[[ "$line" == HTTP/* ]]
	) 2>/dev/null
}

start() {
	local bin dir port pid access secret attempt ready kind
	bin="$(find_bin)"
	dir="$(mktemp -d "${TMPDIR:-/tmp}/versitygw.XXXXXX")"
	touch "$dir/$MARKER"
	mkdir -p "$dir/root/$BUCKET" "$dir/meta"
	access="$(randhex 10)"
	secret="$(randhex 20)"

	pid=""
	for attempt in 1 2 3 4 5; do
		port="$(free_ports 1)" || { rm -rf "$dir"; exit 1; }

		# Metadata in extended attributes, where the file system has them
		# (ext4, xfs, tmpfs since Linux 6.6): there versitygw changes an
		# object's data and ETag together, as S3 does, so a conditional write
		# cannot slip between them. In --sidecar mode (VERSITYGW_SIDECAR=1,
		# or no user xattrs) it stores the ETag before linking the data: a GET
		# can pair the new ETag with the old body, and a replace bound to it
		# overwrite a newer write. resourced's start-up probe refuses that
		# (read-atomic, docs/s3.md), so the S3 tests need xattrs.
		local meta_args=()
		kind=versitygw-xattr
		if [ "${VERSITYGW_SIDECAR:-}" = 1 ] || ! xattrs_work "$dir"; then
			meta_args=(--sidecar "$dir/meta")
			kind=versitygw-sidecar
			log "metadata in a sidecar directory (--sidecar): resourced refuses to serve on it (docs/s3.md)"
		else
			log "metadata in extended attributes"
		fi
		log "starting $bin on 127.0.0.1:$port (root $dir/root, log $dir/versitygw.log)"
		ROOT_ACCESS_KEY="$access" ROOT_SECRET_KEY="$secret" \
			nohup "$bin" --port "127.0.0.1:$port" --keep-alive --quiet \
			posix "${meta_args[@]}" "$dir/root" \
			</dev/null >>"$dir/versitygw.log" 2>&1 &
		pid=$!

		ready=0
		wait_ready "$pid" 60 answers "$port" || ready=$?
		[ "$ready" = 0 ] && break
		if [ "$ready" = 2 ]; then
			kill "$pid" 2>/dev/null || true
			rm -rf "$dir"
			die "versitygw (pid $pid) did not answer on 127.0.0.1:$port within 60 s"
		fi
		log "versitygw exited early (attempt $attempt); log:"
		tail -n 20 "$dir/versitygw.log" >&2 || true
		pid=""
	done
	if [ -z "$pid" ]; then
		rm -rf "$dir"
		die "versitygw did not start"
	fi
	log "versitygw $VERSION is up (pid $pid); bucket $BUCKET"

	printf 'export %s=%q\n' \
		RESOURCED_TEST_S3_ENDPOINT "http://127.0.0.1:$port" \
		RESOURCED_TEST_S3_BUCKET "$BUCKET" \
		RESOURCED_TEST_S3_KIND "$kind" \
		AWS_ACCESS_KEY_ID "$access" \
		AWS_SECRET_ACCESS_KEY "$secret" \
		AWS_REGION us-east-1 \
		VERSITYGW_PID "$pid" \
		VERSITYGW_DIR "$dir"
}

stop() {
	[ -n "${VERSITYGW_PID:-}" ] || [ -n "${VERSITYGW_DIR:-}" ] || die "VERSITYGW_PID and VERSITYGW_DIR are unset: nothing to stop"
	check_marked "${VERSITYGW_DIR:-}" "$MARKER"
	stop_pid "${VERSITYGW_PID:-}" 10
	remove_marked "${VERSITYGW_DIR:-}" "$MARKER"
}

case "${1:-}" in
install) find_bin >/dev/null ;;
start) start ;;
stop) stop ;;
*) usage ;;
esac
