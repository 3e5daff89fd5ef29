#!/usr/bin/env bash
# A local S3 endpoint for logstore's integration tests: versitygw with its
# posix backend, so every bucket is a directory and every object a file under
# $LOGSTORE_STATE/s3/data (handy for "what did we write?" in a test).
#
#   scripts/s3-server.sh start | stop | status | clean
#   scripts/s3-server.sh env         (export lines: eval "$(scripts/s3-server.sh env)")
#
# Knobs (environment):
#   S3_PORT             listen port on 127.0.0.1 (7070)
#   VERSITYGW_VERSION   github.com/versity/versitygw version to install (v1.8.0)
#   LOGSTORE_STATE      state root (<repo>/.state); ours is $LOGSTORE_STATE/s3
#   LOGSTORE_CACHE      cache root (~/.cache/logstore); binary in bin/versitygw
#
# Credentials are fixed test values: access key "logstore", secret
# "logstore-secret", region us-east-1. Path-style addressing only.
set -euo pipefail

LOGSTORE_TOOL=s3-server
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

S3_PORT="${S3_PORT:-7070}"
VERSITYGW_VERSION="${VERSITYGW_VERSION:-v1.8.0}"
S3_ACCESS_KEY=logstore
S3_SECRET_KEY=logstore-secret
S3_REGION=us-east-1
S3_STATE="$LOGSTORE_STATE/s3"
S3_DATA="$S3_STATE/data"
S3_PID="$S3_STATE/pid"
S3_LOG="$S3_STATE/versitygw.log"
# The data dir is on versitygw's command line and nowhere else's.
S3_MARKER="posix $S3_DATA"

# The port the running server listens on, remembered at start, so stop and
# status work even when S3_PORT differs in the caller's environment.
running_port() { cat "$S3_STATE/port" 2>/dev/null || echo "$S3_PORT"; }
endpoint() { echo "http://127.0.0.1:$(running_port)"; }

cmd_env() {
	cat <<-EOF
		export AWS_ACCESS_KEY_ID=$S3_ACCESS_KEY
		export AWS_SECRET_ACCESS_KEY=$S3_SECRET_KEY
		export AWS_REGION=$S3_REGION
		export AWS_ENDPOINT_URL_S3=$(endpoint)
	EOF
}

cmd_start() {
	local bin t0
	if pid_alive "$S3_PID" "$S3_MARKER"; then
		say "already running on $(endpoint)"
		return 0
	fi
	port_open "$S3_PORT" && die "127.0.0.1:$S3_PORT is taken by another process; set S3_PORT"
	bin=$(go_tool versitygw github.com/versity/versitygw/cmd/versitygw "$VERSITYGW_VERSION")
	mkdir -p "$S3_DATA"
	echo "$S3_PORT" >"$S3_STATE/port"
	t0=$(now_ms)
	# Flags rather than versitygw's env vars, so ROOT_ACCESS_KEY etc. in the
	# caller's environment can't change the credentials tests expect.
	# versitygw keeps object metadata in xattrs, which the data dir's
	# filesystem must support (ext4, xfs, btrfs do; some overlay/tmpfs don't:
	# then add --sidecar DIR after "posix").
	spawn "$S3_PID" "$S3_LOG" "$bin" \
		--port "127.0.0.1:$S3_PORT" \
		--access "$S3_ACCESS_KEY" --secret "$S3_SECRET_KEY" \
		--region "$S3_REGION" \
		posix "$S3_DATA" || exit 1
	if ! wait_for_port "$S3_PORT" 30 "$S3_PID"; then
		tail_logs "$S3_LOG"
		stop_pidfile "$S3_PID" 5 "$S3_MARKER"
		die "versitygw did not come up on 127.0.0.1:$S3_PORT"
	fi
	say "ready in $(elapsed_s "$t0") s on $(endpoint) (data in $S3_DATA)"
	say "credentials: eval \"\$($0 env)\""
}

cmd_stop() {
	local was=0 pid
	pid_alive "$S3_PID" "$S3_MARKER" && was=1
	stop_pidfile "$S3_PID" 10 "$S3_MARKER"
	for pid in $(pids_matching "$S3_MARKER"); do
		warn "stopping stray versitygw $pid"
		stop_pid "$pid" 10
		was=1
	done
	rm -f "$S3_STATE/port"
	if ((was)); then say "stopped"; else say "not running"; fi
}

cmd_status() {
	if pid_alive "$S3_PID" "$S3_MARKER"; then
		say "up   pid $(<"$S3_PID") $(endpoint)"
	else
		say "down"
		exit 3
	fi
}

cmd_clean() {
	cmd_stop
	rm -rf "$S3_STATE"
	say "removed $S3_STATE"
}

case ${1:-} in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
clean) cmd_clean ;;
env) cmd_env ;;
*) usage ;;
esac
