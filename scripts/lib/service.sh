# service.sh: what the throw-away test servers' scripts share
# (scripts/versitygw.sh, scripts/seaweedfs.sh, scripts/postgres.sh): fresh
# secrets, free loopback ports, waiting for a server, stopping it and
# removing the directory it ran in. Sourced; the caller defines log and die.

# randhex N prints N random bytes as lower-case hex.
randhex() {
	od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'
}

# port_free PORT succeeds when nothing accepts connections on 127.0.0.1:PORT.
port_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# free_ports N prints N distinct free ports below the kernel's ephemeral
# range (a port a client connection holds locally is free to connect to but
# not to bind) and below 55535 (weed puts a gRPC port 10000 above a port it
# is not given one for).
free_ports() {
	local n=$1 got=() p i hi=32768
	read -r hi _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
	hi=$((hi < 55535 ? hi : 55535))
	[ "$hi" -gt 11000 ] || hi=32768
	for i in $(seq 1 500); do
		p=$((10000 + RANDOM % (hi - 10000)))
		if port_free "$p" && [[ " ${got[*]-} " != *" $p "* ]]; then
			got+=("$p")
			[ "${#got[@]}" -eq "$n" ] && break
		fi
	done
	[ "${#got[@]}" -eq "$n" ] || die "no $n free ports found"
	printf '%s\n' "${got[@]}"
}

# wait_ready PID SECONDS CMD... runs CMD every 0.1 s until it succeeds
# (status 0), PID exits (1) or SECONDS pass (2).
wait_ready() {
	local pid=$1 i tries=$(($2 * 10))
	shift 2
	for i in $(seq 1 "$tries"); do
		kill -0 "$pid" 2>/dev/null || return 1
		"$@" && return 0
		sleep 0.1
	done
	return 2
}

# stop_pid PID SECONDS sends SIGTERM to PID, waits up to SECONDS for it to
# exit and sends SIGKILL if it did not. Nothing happens if PID is gone.
stop_pid() {
	local pid=$1 i
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
	kill "$pid" 2>/dev/null || true
	for i in $(seq 1 $(($2 * 10))); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "pid $pid did not exit; sending SIGKILL"
		kill -9 "$pid" 2>/dev/null || true
	fi
	log "stopped pid $pid"
}

# check_marked DIR MARKER dies unless DIR is absent, empty, or holds
# MARKER (the file the script that made DIR put there).
check_marked() {
	[ -z "$1" ] || [ ! -e "$1" ] || [ -f "$1/$2" ] || die "$1 was not created by $(basename "$0"); not touching it"
}

# remove_marked DIR MARKER removes DIR when it holds MARKER (see
# check_marked for one that does not).
remove_marked() {
	check_marked "$1" "$2"
	if [ -n "$1" ] && [ -f "$1/$2" ]; then
		rm -rf "$1"
		log "removed $1"
	fi
}
