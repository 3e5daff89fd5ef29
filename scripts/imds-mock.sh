#!/usr/bin/env bash
# A fake EC2 instance metadata service (amazon-ec2-metadata-mock) for rack
# detection tests: one per simulated availability zone, IMDSv2 only (a GET
# without a session token gets 401, as on an instance that enforces v2).
#
#   scripts/imds-mock.sh start ZONE_NAME ZONE_ID PORT
#       e.g. start ap-northeast-2a apne2-az1 18081
#       serves /latest/meta-data/placement/availability-zone    = ZONE_NAME
#              /latest/meta-data/placement/availability-zone-id = ZONE_ID
#              /latest/meta-data/placement/region = ZONE_NAME less its letter
#   scripts/imds-mock.sh stop [PORT]      (no PORT: every mock we started)
#   scripts/imds-mock.sh status [PORT]
#
# Point a client at it with AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.0.1:PORT
#
# Knobs (environment):
#   AEMM_VERSION     github.com/aws/amazon-ec2-metadata-mock version (v1.13.0)
#   LOGSTORE_STATE   state root (<repo>/.state); ours is $LOGSTORE_STATE/imds/PORT
#   LOGSTORE_CACHE   cache root (~/.cache/logstore); binary in bin/ec2-metadata-mock
set -euo pipefail

LOGSTORE_TOOL=imds-mock
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

AEMM_VERSION="${AEMM_VERSION:-v1.13.0}"
IMDS_STATE="$LOGSTORE_STATE/imds"

state_of() { echo "$IMDS_STATE/$1"; }
# The config file path is on the mock's command line and nowhere else's.
marker_of() { echo "$(state_of "$1")/config.json"; }

check_port() {
	if ! [[ $1 =~ ^[0-9]+$ ]] || (($1 < 1 || $1 > 65535)); then
		die "bad port '$1'"
	fi
}

cmd_start() {
	local zone=$1 zone_id=$2 port=$3 dir bin t0
	check_port "$port"
	# They go into JSON unescaped; zone names and ids never need more.
	[[ $zone =~ ^[A-Za-z0-9-]+$ && $zone_id =~ ^[A-Za-z0-9-]+$ ]] ||
		die "zone name and id may hold only letters, digits and '-'"
	dir=$(state_of "$port")
	if pid_alive "$dir/pid" "$(marker_of "$port")"; then
		# Same port, maybe other zone: restart so the caller gets what it asked.
		if grep -qF "\"$zone_id\"" "$dir/config.json" && grep -qF "\"$zone\"" "$dir/config.json"; then
			say "already running on 127.0.0.1:$port ($zone, $zone_id)"
			return 0
		fi
		stop_pidfile "$dir/pid" 5 "$(marker_of "$port")"
	fi
	port_open "$port" && die "127.0.0.1:$port is taken by another process"
	bin=$(go_tool ec2-metadata-mock \
		github.com/aws/amazon-ec2-metadata-mock/cmd/ec2-metadata-mock "$AEMM_VERSION")
	mkdir -p "$dir"
	# Metadata values go through the mock's config file (keys as in its
	# defaults: "placement-availability-zone" etc.). Passing -c also stops it
	# from reading a stray $HOME/aemm-config.json.
	cat >"$dir/config.json" <<-EOF
		{
		  "imdsv2": true,
		  "server": { "hostname": "127.0.0.1", "port": "$port" },
		  "metadata": {
		    "values": {
		      "placement-availability-zone": "$zone",
		      "placement-availability-zone-id": "$zone_id",
		      "placement-region": "${zone%[a-z]}"
		    }
		  }
		}
	EOF
	t0=$(now_ms)
	# Flags repeat the config so that AEMM_* variables in the caller's
	# environment (which beat the config file) can't loosen IMDSv2 or move
	# the listener off 127.0.0.1.
	spawn "$dir/pid" "$dir/mock.log" "$bin" \
		-c "$dir/config.json" -I -n 127.0.0.1 -p "$port" || exit 1
	if ! wait_for_port "$port" 15 "$dir/pid"; then
		tail_logs "$dir/mock.log"
		stop_pidfile "$dir/pid" 5 "$(marker_of "$port")"
		die "ec2-metadata-mock did not come up on 127.0.0.1:$port"
	fi
	say "ready in $(elapsed_s "$t0") s on http://127.0.0.1:$port ($zone, $zone_id, IMDSv2 only)"
}

# ports_started: ports of every mock started and not stopped since (its pid
# file is still there, whether or not the process still is).
ports_started() {
	local f
	for f in "$IMDS_STATE"/*/pid; do
		[[ -f $f ]] && basename "$(dirname "$f")"
	done
	return 0
}

stop_one() {
	local port=$1 dir
	dir=$(state_of "$port")
	if pid_alive "$dir/pid" "$(marker_of "$port")"; then
		stop_pidfile "$dir/pid" 5 "$(marker_of "$port")"
		say "stopped 127.0.0.1:$port"
	else
		rm -f "$dir/pid"
	fi
}

cmd_stop() {
	local port pid
	if (($# > 0)); then
		check_port "$1"
		stop_one "$1"
		return
	fi
	for port in $(ports_started); do stop_one "$port"; done
	# Strays whose pid file is gone: anything running a config from our dir.
	for pid in $(pids_matching "$IMDS_STATE/"); do
		[[ $(cmdline_of "$pid") == *ec2-metadata-mock* ]] || continue
		warn "stopping stray ec2-metadata-mock $pid"
		stop_pid "$pid" 5
	done
}

cmd_status() {
	local port ports down=0
	if (($# > 0)); then ports=$1; else ports=$(ports_started); fi
	for port in $ports; do
		if pid_alive "$(state_of "$port")/pid" "$(marker_of "$port")"; then
			say "127.0.0.1:$port up   pid $(<"$(state_of "$port")/pid")"
		else
			say "127.0.0.1:$port down"
			down=1
		fi
	done
	if [[ -z $ports ]]; then
		say "none running"
		exit 3
	fi
	((down == 0)) || exit 3
}

case ${1:-} in
start)
	(($# == 4)) || usage
	cmd_start "$2" "$3" "$4"
	;;
stop) cmd_stop "${@:2}" ;;
status) cmd_status "${@:2}" ;;
*) usage ;;
esac
