#!/usr/bin/env bash
# postgres.sh starts and stops a throw-away PostgreSQL cluster on loopback
# for the index/pgindex tests (the shared search index).
#
#   eval "$(scripts/postgres.sh start)"   # stdout is export lines only
#   go test ./index/pgindex
#   scripts/postgres.sh stop              # reads POSTGRES_SH_PID, POSTGRES_SH_DIR
#
# start finds initdb (on PATH or in /usr/lib/postgresql/*/bin; install
# Debian's postgresql package when it is missing), creates a temporary
# directory, runs initdb there with a random password for the superuser
# "resourced" (scram-sha-256, nothing is committed), and starts the
# server on a free 127.0.0.1 port with its socket in that directory. The
# server refuses to run as root, so as root (CI) the cluster belongs to
# the unprivileged user $POSTGRES_SH_USER (default nobody). Everything but
# the export lines goes to stderr.
set -euo pipefail

readonly MARKER=.postgres-sh # marks a directory this script created
readonly RUN_AS="${POSTGRES_SH_USER:-nobody}"

log() { printf 'postgres.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
# shellcheck source=lib/service.sh
. "$(dirname "$0")/lib/service.sh"

usage() {
	cat >&2 <<'USAGE'
usage: eval "$(scripts/postgres.sh start)"
       scripts/postgres.sh stop
USAGE
	exit 2
}

# bindir prints the directory of initdb, pg_ctl and pg_isready.
bindir() {
	local d
	if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then
		d="$(dirname "$(readlink -f "$(command -v pg_ctl)")")"
		printf '%s\n' "$d"
		return
	fi
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
			printf '%s\n' "$d"
			return
		fi
	done
	die "initdb is not installed: run 'apt-get install -y postgresql' (Debian) and try again"
}

# as runs a command as the cluster's owner.
as() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u "$RUN_AS" -- "$@"
	else
		"$@"
	fi
}

start() {
	local bin dir pw port pid attempt
	bin="$(bindir)"
	dir="$(mktemp -d "${TMPDIR:-/tmp}/postgres-sh.XXXXXX")"
	touch "$dir/$MARKER"
	chmod 0700 "$dir"
	pw="$(randhex 16)"
	(umask 077 && printf '%s\n' "$pw" >"$dir/pwfile")
	if [ "$(id -u)" = 0 ]; then
		id "$RUN_AS" >/dev/null 2>&1 || { rm -rf "$dir"; die "user $RUN_AS does not exist (set POSTGRES_SH_USER)"; }
		chown -R "$RUN_AS" "$dir"
	fi
	log "initdb in $dir/data (owner $(as id -un))"
	if ! as "$bin/initdb" -D "$dir/data" -U resourced --pwfile="$dir/pwfile" --auth=scram-sha-256 \
		-E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1; then
		tail -n 20 "$dir/initdb.log" >&2 || true
		rm -rf "$dir"
		die "initdb failed"
	fi
	rm -f "$dir/pwfile"

	pid=""
	for attempt in 1 2 3 4 5; do
		port="$(free_ports 1)" || { rm -rf "$dir"; exit 1; }
		log "starting PostgreSQL on 127.0.0.1:$port (log $dir/postgres.log)"
		if as "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
			-o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=on" start >&2; then
			pid="$(head -n 1 "$dir/data/postmaster.pid")"
			break
		fi
		log "PostgreSQL did not start (attempt $attempt); log:"
		tail -n 20 "$dir/postgres.log" >&2 || true
	done
	if [ -z "$pid" ]; then
		rm -rf "$dir"
		die "PostgreSQL did not start"
	fi
	log "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') is up (pid $pid)"
	printf 'export %s=%q\n' \
		RESOURCED_TEST_PG_URL "postgres://resourced:$pw@127.0.0.1:$port/postgres?sslmode=disable" \
		POSTGRES_SH_PID "$pid" \
		POSTGRES_SH_DIR "$dir"
}

stop() {
	local pid="${POSTGRES_SH_PID:-}" dir="${POSTGRES_SH_DIR:-}"
	[ -n "$pid" ] || [ -n "$dir" ] || die "POSTGRES_SH_PID and POSTGRES_SH_DIR are unset: nothing to stop"
	check_marked "$dir" "$MARKER"
	if [ -n "$dir" ] && [ -f "$dir/data/postmaster.pid" ]; then
		as "$(bindir)/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >&2 || true
	fi
	stop_pid "$pid" 10
	log "stopped PostgreSQL"
	remove_marked "$dir" "$MARKER"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
*) usage ;;
esac
