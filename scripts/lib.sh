# shellcheck shell=bash
# Shared helpers for the scripts that run real services next to logstore
# (kafka-cluster.sh, s3-server.sh, imds-mock.sh). Source it; don't run it.
#
# Everything a script starts lives under one state dir and is found again
# through a pid file, so "stop" only ever touches processes we started.

# Repo root from this file's location, so the scripts work from any cwd.
LOGSTORE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
# Data, logs and pid files; .gitignore'd.
LOGSTORE_STATE="${LOGSTORE_STATE:-$LOGSTORE_ROOT/.state}"
# Downloads and builds reused between runs and between clones.
LOGSTORE_CACHE="${LOGSTORE_CACHE:-$HOME/.cache/logstore}"
LOGSTORE_BIN="$LOGSTORE_CACHE/bin"
export LOGSTORE_ROOT LOGSTORE_STATE LOGSTORE_CACHE

# Prefix for messages; each script sets LOGSTORE_TOOL before sourcing.
: "${LOGSTORE_TOOL:=$(basename "$0" .sh)}"

say() { printf '%s: %s\n' "$LOGSTORE_TOOL" "$*"; }
warn() { printf '%s: %s\n' "$LOGSTORE_TOOL" "$*" >&2; }
die() {
	warn "$*"
	exit 1
}

need() {
	local cmd
	for cmd in "$@"; do
		command -v "$cmd" >/dev/null 2>&1 || die "needs '$cmd' on PATH"
	done
}

# now_ms prints wall-clock milliseconds, for "ready in N s" reports.
now_ms() { date +%s%3N; }

# elapsed_s START_MS prints the seconds since START_MS with one decimal.
elapsed_s() {
	local ms=$(($(now_ms) - $1))
	printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100))
}

# port_open PORT [HOST]: true when something accepts TCP connections there.
# Uses bash's /dev/tcp so no nc/ss is needed.
port_open() {
	local port=$1 host=${2:-127.0.0.1}
	(exec 3<>"/dev/tcp/$host/$port") 2>/dev/null
}

# pid_alive PIDFILE [MARKER]: true when the pid in PIDFILE runs and, if
# MARKER is given, its command line contains MARKER. The marker guards
# against a recycled pid after a reboot or a long pause.
pid_alive() {
	local pidfile=$1 marker=${2:-} pid
	[[ -s $pidfile ]] || return 1
	pid=$(<"$pidfile")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	[[ -z $marker || $(cmdline_of "$pid") == *"$marker"* ]]
}

# cmdline_of PID: the process's command line with spaces between arguments.
cmdline_of() { tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" || true; }

# spawn PIDFILE LOGFILE CMD...: starts CMD detached, output to LOGFILE, and
# returns once PIDFILE holds its pid. setsid gives the server its own
# session, so a Ctrl-C or a test runner ending its process group leaves it
# alone; "stop" ends it. setsid forks when the caller leads its process
# group, so $! can't be trusted: the child writes its own pid, then execs.
spawn() {
	local pidfile=$1 log=$2 tries=100
	shift 2
	rm -f "$pidfile"
	# The service closes descriptors 3-9 it would inherit: a broker that a
	# test restarts under `flock FILE go test …` kept the lock for as long
	# as it ran, and every later test waited on it.
	# shellcheck disable=SC2016 # $$ and $@ belong to the inner bash.
	nohup setsid bash -c 'echo $$ >"$0" && exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- "$@"' "$pidfile" "$@" \
		>"$log" 2>&1 </dev/null &
	while ((tries-- > 0)); do
		[[ -s $pidfile ]] && return 0
		sleep 0.05
	done
	warn "could not start $1 (no pid after 5 s)"
	return 1
}

# wait_for_port PORT TIMEOUT_S [PIDFILE] [HOST]: waits until PORT answers on
# HOST (127.0.0.1). Gives up early when the process in PIDFILE has died, so a
# crash is reported at once instead of after the whole timeout.
wait_for_port() {
	local port=$1 timeout=$2 pidfile=${3:-} host=${4:-127.0.0.1}
	local deadline=$((SECONDS + timeout))
	until port_open "$port" "$host"; do
		if [[ -n $pidfile ]] && ! pid_alive "$pidfile"; then
			return 1
		fi
		((SECONDS < deadline)) || return 1
		sleep 0.2
	done
}

# stop_pid PID TIMEOUT_S: SIGTERM, then SIGKILL if still there after
# TIMEOUT_S. Returns once the process is gone.
stop_pid() {
	local pid=$1 timeout=$2 deadline
	kill -TERM "$pid" 2>/dev/null || return 0
	deadline=$((SECONDS + timeout))
	while kill -0 "$pid" 2>/dev/null; do
		if ((SECONDS >= deadline)); then
			warn "pid $pid ignored SIGTERM for ${timeout}s; sending SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
			sleep 0.2
			break
		fi
		sleep 0.2
	done
	# A killed child of ours stays a zombie until reaped; don't wait on it.
	while kill -0 "$pid" 2>/dev/null && [[ $(ps -o stat= -p "$pid" 2>/dev/null) != Z* ]]; do
		sleep 0.1
	done
}

# stop_pidfile PIDFILE TIMEOUT_S [MARKER]: stops the process a pid file
# names (if it is still ours) and removes the pid file.
stop_pidfile() {
	local pidfile=$1 timeout=$2 marker=${3:-}
	if pid_alive "$pidfile" "$marker"; then
		stop_pid "$(<"$pidfile")" "$timeout"
	fi
	rm -f "$pidfile"
}

# pids_matching MARKER: pids of processes whose command line contains
# MARKER (a fixed string; regex characters are escaped for pgrep). Used to
# find strays that lost their pid file; markers contain state-dir paths, so
# only our processes match.
pids_matching() {
	local re
	re=$(printf '%s' "$1" | sed 's/[][\\.*^$+?(){}|]/\\&/g')
	pgrep -f -- "$re" || true
}

# go_tool NAME PACKAGE VERSION: path of a Go binary built from
# PACKAGE@VERSION into $LOGSTORE_BIN, installing it the first time (or when
# VERSION changed). A stamp file remembers which version is there.
go_tool() {
	local name=$1 pkg=$2 version=$3
	local bin="$LOGSTORE_BIN/$name" stamp="$LOGSTORE_BIN/.$name.version"
	if [[ -x $bin && -f $stamp && $(<"$stamp") == "$pkg@$version" ]]; then
		echo "$bin"
		return
	fi
	need go
	mkdir -p "$LOGSTORE_BIN"
	warn "installing $pkg@$version into $LOGSTORE_BIN (once)"
	# GOFLAGS from a surrounding module (e.g. -mod=vendor) must not leak
	# into an install of someone else's module.
	(cd / && GOBIN="$LOGSTORE_BIN" GOFLAGS='' go install "$pkg@$version") >&2 ||
		die "go install $pkg@$version failed"
	local built
	built="$LOGSTORE_BIN/$(basename "$pkg")"
	[[ $built == "$bin" ]] || mv -f "$built" "$bin"
	echo "$pkg@$version" >"$stamp"
	echo "$bin"
}

# tail_logs FILE...: last lines of each existing file, for failure reports.
tail_logs() {
	local f
	for f in "$@"; do
		[[ -s $f ]] || continue
		printf '\n----- %s (last 30 lines) -----\n' "$f" >&2
		tail -n 30 "$f" >&2
	done
}

# usage prints the calling script's header comment (line 2 up to its
# `set -euo pipefail`) as its help, and exits 2 (a usage error).
usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}
