#!/usr/bin/env bash
# The zone lab: three availability zones on one Linux host, with the kernel,
# not logstore, counting the bytes that cross them.
#
#   scripts/zonelab.sh once [RUN OPTIONS]      (up, run, down: `make zones`)
#   scripts/zonelab.sh up | down | status
#   scripts/zonelab.sh run [--records N] [--per-zone P] [--rf R] [--members Z,Z,...]
#                          [--restart] [--produce] [--churn] [--group-protocol P] [--out DIR]
#   scripts/zonelab.sh --compare [--records N]  (Spark, logstore, kafka-go side by side)
#   scripts/zonelab.sh counters [--zero]
#   scripts/zonelab.sh exec ZONE CMD...         (ZONE = az-a, az-b, az-c)
#   scripts/zonelab.sh kafka ARGS...            (scripts/kafka-cluster.sh on the lab)
#
# Each zone is a network namespace (zl-az-a, zl-az-b, zl-az-c) joined to a
# router namespace (zl-core) by a veth pair; the root namespace reaches the
# lab through zl-core too (addresses in 198.18.0.0/15, RFC 2544's test
# range; the lab has no route anywhere else):
#
#   root ns  198.18.0.1 ── zl-core ─┬─ zl-az-a  198.18.1.2, broker 1 on 198.18.1.9
#                                   ├─ zl-az-b  198.18.2.2, broker 2 on 198.18.2.9
#                                   └─ zl-az-c  198.18.3.2, broker 3 on 198.18.3.9
#
# The brokers are scripts/kafka-cluster.sh's three KRaft nodes, each started
# inside its zone on its own address (client, controller and a separate
# replication listener there), broker.rack az-a/az-b/az-c and the
# RackAwareReplicaSelector. Workers (logstore processes) run inside the
# zones. In each zone an iptables chain ZONELAB counts, per broker, the bytes
# the brokers' client ports send into that zone: broker-to-broker replication
# uses its own listener, so only what clients fetch is counted, and a
# worker's same-zone bytes go through the zone's own INPUT hook too; a chain
# ZONELAB_OUT counts the other way, what the zone's clients send to each
# broker's client port (produce requests). A ZONELAB chain in zl-core counts
# what leaves the lab for the root namespace (the tools that fill topics, a
# Spark driver), and its ZONELAB_OUT what the root namespace sends in. Byte
# counts are IP packets, headers included.
#
# `run` creates a topic (RF 3, 4 partitions per zone by default), fills it
# with pipeline.LogGen logs (scripts/bench's capture, produced by
# scripts/labclient), zeroes the counters, runs one `logstore run --until
# now` per member inside its zone, reads the output back with pyarrow
# (scripts/verify_dataset.py) and prints bytes same-zone and cross-zone per
# zone by the kernel, next to logstore's own counts. --restart streams
# instead: the members run while scripts/labclient produces, the az-a
# broker is stopped (controlled shutdown) 12 s in and started 10 s after it
# is down, production goes on until 30 s after every replica is in sync
# again, and a table shows per second what the az-a worker received from
# its own zone and from the others, beside the count of under-replicated
# partitions. --produce turns the Kafka output on and measures the write
# side (zone-local produce, beside Kafka's own ProducerPerformance; with
# --restart, through the az-a broker's restart): see zonelab-produce.sh.
# --churn streams while a fourth member joins, one restarts as a rolling
# deploy does it and the fourth leaves, and gives bytes across zones per
# event, with the group coordinator's share apart; --group-protocol
# consumer runs the members on the next-generation protocol (KIP-848):
# see zonelab-churn.sh.
# Results: DIR/result.json (default $LOGSTORE_STATE/zonelab/runs/<time>).
# --compare: see zonelab-compare.sh.
#
# Needs root, iproute2 and iptables (scripts/setup.sh installs it from
# Debian's packages when missing), Java, Go and the pyarrow venv of
# scripts/setup.sh. `down`, and a trap on any failure of `up`, remove every
# namespace and stop every process the lab started.
#
# Knobs (environment):
#   ZONELAB_RESTART_AT    seconds into a --restart run when az-a stops (12)
#   ZONELAB_RESTART_FOR   seconds it stays down (10)
#   ZONELAB_RATE          records/s produced during a --restart run (2000)
#   ZONELAB_AFTER         seconds a --restart run goes on once every replica
#                         is in sync again (30)
#   ZONELAB_CHURN_STEADY  seconds a --churn run streams before its first
#                         event (20)
#   ZONELAB_CHURN_SETTLE  seconds between its events (20)
#   ZONELAB_CHURN_DOWN    seconds its restarted member stays down (5)
#   ZONELAB_GROUP_PROTOCOL  the members' kafka.group_protocol when `run` is
#                         given no --group-protocol: classic (the default)
#                         or consumer (KIP-848), so `make zones` can choose
#   ZONELAB_PRODUCE_PHASES  --produce: the phases to run, comma-separated,
#                         logstore-read-only first (the baseline); all five
#                         by default (see zonelab-produce.sh)
#   ZONELAB_SYSTEMS       --compare: the runs to do, comma-separated, of
#                         spark-no-rack, spark-az-a, spark-minpart, logstore,
#                         kafka-go (all)
set -euo pipefail

LOGSTORE_TOOL=zonelab
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/bench-lib.sh
source "$LOGSTORE_ROOT/scripts/bench-lib.sh"
# shellcheck source=scripts/zonelab-compare.sh
source "$LOGSTORE_ROOT/scripts/zonelab-compare.sh"
# shellcheck source=scripts/zonelab-produce.sh
source "$LOGSTORE_ROOT/scripts/zonelab-produce.sh"
# shellcheck source=scripts/zonelab-churn.sh
source "$LOGSTORE_ROOT/scripts/zonelab-churn.sh"

ZONES=(az-a az-b az-c)
CORE=zl-core
HOST_IF=zl-host
ZL_STATE="$LOGSTORE_STATE/zonelab"
ZONELAB_RESTART_AT="${ZONELAB_RESTART_AT:-12}"
ZONELAB_RESTART_FOR="${ZONELAB_RESTART_FOR:-10}"
ZONELAB_RATE="${ZONELAB_RATE:-2000}"
ZONELAB_AFTER="${ZONELAB_AFTER:-30}"
ZONELAB_PRODUCE_PHASES="${ZONELAB_PRODUCE_PHASES:-logstore-read-only,logstore-rack-aware,logstore-sticky,perf-rack-aware,perf-rack-blind}"
[[ $ZONELAB_PRODUCE_PHASES == logstore-read-only* ]] || die "ZONELAB_PRODUCE_PHASES must start with logstore-read-only (the baseline the others are net of)"
# pyarrow, from scripts/setup.sh (the bench venv is only for --compare).
ARROW_PY="$LOGSTORE_CACHE/venv/bin/python"

# What must happen however the script ends, last added first.
EXIT_HOOKS=()
run_exit_hooks() {
	local i
	for ((i = ${#EXIT_HOOKS[@]} - 1; i >= 0; i--)); do ${EXIT_HOOKS[i]} || true; done
}
trap run_exit_hooks EXIT

ns_of() { echo "zl-$1"; }         # zone → namespace
index_of() {                      # zone → 1, 2, 3 (its broker's node number)
	local i
	for i in 1 2 3; do [[ ${ZONES[i - 1]} == "$1" ]] && echo "$i" && return; done
	die "unknown zone '$1' (zones: ${ZONES[*]})"
}
zone_addr() { echo "198.18.$1.2"; }   # the zone's own address (node number)
broker_addr() { echo "198.18.$1.9"; } # broker N's address
client_port() { echo $(($1 * 10000 + 9092)); }

# The lab's brokers are kafka-cluster.sh's, under the lab's own state dir,
# so they never meet the shared 127.0.0.1 cluster.
export KAFKA_REPLICATION_LISTENER=1
# Kafka's default: members of a new group that start together join one
# generation, instead of the first taking every partition and reading it
# all before the others arrive.
export KAFKA_GROUP_REBALANCE_DELAY_MS=3000
for _n in 1 2 3; do
	export "KAFKA_HOST_$_n=$(broker_addr "$_n")" "KAFKA_EXEC_$_n=ip netns exec $(ns_of "${ZONES[_n - 1]}")"
done
unset _n
kafka() { LOGSTORE_STATE="$ZL_STATE" bash "$LOGSTORE_ROOT/scripts/kafka-cluster.sh" "$@"; }
kafka_tool() { kafka tool "$@"; }
bootstrap() { kafka bootstrap; }

in_ns() {
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}

lab_exists() { ip netns list | grep -qE "^($CORE|zl-az-[abc])( |$)"; }

# ---------------------------------------------------------------- network

net_up() {
	local i zone ns
	ip netns add "$CORE"
	in_ns "$CORE" ip link set lo up
	in_ns "$CORE" sysctl -qw net.ipv4.ip_forward=1
	# The root namespace's door into the lab, and the lab's only way out.
	ip link add "$HOST_IF" type veth peer name host netns "$CORE"
	ip addr add 198.18.0.1/24 dev "$HOST_IF"
	ip link set "$HOST_IF" up
	in_ns "$CORE" ip addr add 198.18.0.2/24 dev host
	in_ns "$CORE" ip link set host up
	ip route add 198.18.0.0/15 via 198.18.0.2 dev "$HOST_IF"
	for i in 1 2 3; do
		zone=${ZONES[i - 1]}
		ns=$(ns_of "$zone")
		ip netns add "$ns"
		in_ns "$ns" ip link set lo up
		in_ns "$CORE" ip link add "$zone" type veth peer name core netns "$ns"
		in_ns "$CORE" ip addr add "198.18.$i.1/24" dev "$zone"
		in_ns "$CORE" ip link set "$zone" up
		in_ns "$ns" ip addr add "$(zone_addr "$i")/24" dev core
		in_ns "$ns" ip addr add "$(broker_addr "$i")/24" dev core
		in_ns "$ns" ip link set core up
		# Connections out of the zone leave from the zone's address; the
		# broker's own address is only for its listeners.
		in_ns "$ns" ip route add 198.18.0.0/15 via "198.18.$i.1" src "$(zone_addr "$i")"
	done
	counters_install
}

# counters_install adds, in each zone, a ZONELAB chain on INPUT with one
# counting rule per broker: TCP from the broker's address and client port;
# and a ZONELAB_OUT chain on OUTPUT with one per broker the other way: TCP
# to the broker's address and client port (what a zone's clients send:
# produce requests above all). In zl-core, "outside" counts the same for the
# root namespace's clients, on FORWARD.
counters_install() {
	local zone ns n
	for zone in "${ZONES[@]}" outside; do
		ns=$CORE
		[[ $zone == outside ]] || ns=$(ns_of "$zone")
		in_ns "$ns" iptables -w -N ZONELAB
		in_ns "$ns" iptables -w -N ZONELAB_OUT
		if [[ $zone == outside ]]; then
			in_ns "$ns" iptables -w -A FORWARD -o host -j ZONELAB
			in_ns "$ns" iptables -w -A FORWARD -i host -j ZONELAB_OUT
		else
			in_ns "$ns" iptables -w -A INPUT -j ZONELAB
			in_ns "$ns" iptables -w -A OUTPUT -j ZONELAB_OUT
		fi
		for n in 1 2 3; do
			in_ns "$ns" iptables -w -A ZONELAB -s "$(broker_addr "$n")/32" -p tcp --sport "$(client_port "$n")" \
				-m comment --comment "from broker $n (${ZONES[n - 1]})"
			in_ns "$ns" iptables -w -A ZONELAB_OUT -d "$(broker_addr "$n")/32" -p tcp --dport "$(client_port "$n")" \
				-m comment --comment "to broker $n (${ZONES[n - 1]})"
		done
	done
}

# counters_read [in|out] prints "ZONE BROKER_ZONE BYTES" for every (zone,
# broker) pair, "outside" being the root namespace, straight from
# `iptables -L -v -x -n`: in, the bytes the zone received from the broker's
# client port (the default); out, the bytes it sent to it.
counters_read() {
	local zone ns chain=ZONELAB
	[[ ${1:-in} == out ]] && chain=ZONELAB_OUT
	for zone in "${ZONES[@]}" outside; do
		ns=$CORE
		[[ $zone == outside ]] || ns=$(ns_of "$zone")
		in_ns "$ns" iptables -w -L "$chain" -v -x -n | awk -v zone="$zone" '
			NR > 2 { for (i = 1; i <= NF; i++) if ($i ~ /^198\.18\.[0-9]+\.9$/) { split($i, a, "."); print zone, "az-" substr("abc", a[3], 1), $2 } }'
	done
}

counters_zero() {
	local ns
	for ns in $(ns_of az-a) $(ns_of az-b) $(ns_of az-c) "$CORE"; do
		in_ns "$ns" iptables -w -Z ZONELAB
		in_ns "$ns" iptables -w -Z ZONELAB_OUT
	done
}

# counters_table [in|out] prints counters_read's numbers as a table, one
# row per zone.
counters_table() {
	local dir=${1:-in}
	counters_read "$dir" | awk -v dir="$dir" '
		{ b[$1, $2] = $3; if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 } }
		END {
			if (dir == "out") printf "| from zone | to az-a | to az-b | to az-c | same-zone | cross-zone | cross %%\n"
			else printf "| to zone | from az-a | from az-b | from az-c | same-zone | cross-zone | cross %%\n"
			printf "|---|---:|---:|---:|---:|---:|---:|\n"
			for (i = 0; i < n; i++) {
				z = order[i]; same = (z == "outside") ? 0 : b[z, z]
				tot = b[z, "az-a"] + b[z, "az-b"] + b[z, "az-c"]; cross = tot - same
				printf "| %s | %d | %d | %d | %d | %d | %.3f%%\n", z, b[z, "az-a"], b[z, "az-b"], b[z, "az-c"], same, cross, tot ? 100 * cross / tot : 0
			}
		}'
}

# ---------------------------------------------------------------- up / down

cmd_up() {
	(($(id -u) == 0)) || die "needs root (network namespaces and iptables)"
	if ! command -v iptables >/dev/null || [[ ! -x $ARROW_PY ]]; then
		bash "$LOGSTORE_ROOT/scripts/setup.sh"
	fi
	need ip iptables
	if lab_exists; then
		if kafka status >/dev/null 2>&1; then
			say "already up ($(bootstrap))"
			return 0
		fi
		die "lab namespaces exist but its brokers are not all up; run '$0 down' first"
	fi
	trap 'warn "up failed; tearing the lab down"; cmd_down' ERR
	mkdir -p "$ZL_STATE"
	net_up
	kafka start
	trap - ERR
	say "up: zones ${ZONES[*]} (namespaces $(ns_of az-a) $(ns_of az-b) $(ns_of az-c)), brokers $(bootstrap)"
}

# ns_pids NS: the processes inside a namespace; everything in the lab's
# namespaces was started by the lab.
ns_pids() { ip netns pids "$1" 2>/dev/null || true; }

cmd_down() {
	local zone ns pid
	[[ -d $ZL_STATE/kafka ]] && kafka stop || true
	for ns in $(ns_of az-a) $(ns_of az-b) $(ns_of az-c) "$CORE"; do
		ip netns list | grep -qE "^$ns( |$)" || continue
		for pid in $(ns_pids "$ns"); do
			warn "stopping pid $pid left in $ns: $(cmdline_of "$pid" | cut -c1-120)"
			stop_pid "$pid" 10
		done
		ip netns del "$ns"
	done
	# Deleting zl-core removed the veth pair and with it the route.
	ip link del "$HOST_IF" 2>/dev/null || true
	say "down"
}

cmd_status() {
	if ! lab_exists; then
		say "down"
		exit 3
	fi
	ip netns list | grep -E "^($CORE|zl-az-[abc])( |$)" | sed "s/^/$LOGSTORE_TOOL: namespace /"
	kafka status
}

cmd_exec() {
	local zone=${1:?exec needs ZONE CMD...}
	shift
	index_of "$zone" >/dev/null
	exec ip netns exec "$(ns_of "$zone")" "$@"
}

# ---------------------------------------------------------------- run

# capture PARTITIONS N DIR: N generated logs in DIR/capture.jsonl, the
# capture of scripts/bench: record i in partition i % PARTITIONS, so at
# offset i / PARTITIONS once produced in order.
capture() {
	(cd "$LOGSTORE_ROOT" && LOGSTORE_BENCH_CAPTURE="$3/capture.jsonl" LOGSTORE_BENCH_RECORDS=$2 \
		LOGSTORE_BENCH_PARTITIONS=$1 \
		go test -count=1 -tags integration -run '^TestBenchCapture$' ./cmd/logstore/ >"$3/capture.log" 2>&1) ||
		{
			tail_logs "$3/capture.log"
			die "generating the logs failed"
		}
}

# produce TOPIC DIR [RATE]: produces DIR/capture.jsonl into TOPIC from the
# root namespace (scripts/labclient: franz-go's idempotent producer, so a
# broker restart neither loses nor repeats a record), as fast as it goes or
# at RATE records/s.
produce() {
	local t0
	t0=$(now_ms)
	"$2/labclient" produce -brokers "$(bootstrap)" -topic "$1" -input "$2/capture.jsonl" -rate "${3:-0}" >"$2/produce.log" 2>&1 ||
		{
			tail_logs "$2/produce.log"
			die "producing failed"
		}
	say "$(tail -1 "$2/produce.log") in $(elapsed_s "$t0") s"
}

# sample_counters FILE [OUT_FILE]: every second, "EPOCH_MS ZONE BROKER_ZONE
# BYTES" lines of counters_read in FILE (and of counters_read out in
# OUT_FILE), until killed.
sample_counters() {
	local t
	while :; do
		t=$(now_ms)
		counters_read | sed "s/^/$t /" >>"$1"
		[[ -z ${2:-} ]] || counters_read out | sed "s/^/$t /" >>"$2"
		sleep 1
	done
}

# leaders prints how many of TOPIC's partition leaders each zone holds.
leaders() {
	kafka_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$(bootstrap)" --describe --topic "$1" 2>/dev/null |
		awk '/Leader:/ { for (i = 1; i < NF; i++) if ($i == "Leader:") n[$(i + 1)]++ }
			END { printf "az-a=%d az-b=%d az-c=%d", n[1], n[2], n[3] }'
}

event() { echo "$1 $(now_ms)" >>"$DIR/events.txt"; }

# start_sampling zeroes the counters, samples them every second into
# $dir/samples.txt (sample_counters, one of the caller's helpers) and notes
# the start.
start_sampling() {
	counters_zero
	: >"$dir/samples.txt"
	: >"$dir/events.txt"
	sample_counters "$dir/samples.txt" &
	helpers=$!
	event start
}

# restart_az_a ISR_FILE: ZONELAB_RESTART_AT s from now the az-a broker stops
# (controlled shutdown), ZONELAB_RESTART_FOR s after it is down it starts
# again; returns once ISR_FILE (`labclient isr`'s samples) finds every
# replica in sync again, or 180 s later. Each step is an event.
restart_az_a() {
	sleep "$ZONELAB_RESTART_AT"
	event stop
	kafka stop-node 1
	event stopped
	sleep "$ZONELAB_RESTART_FOR"
	event restart
	kafka start-node 1
	event registered
	local deadline=$((SECONDS + 180))
	until [[ $(tail -n 1 "$1" | cut -d' ' -f2) == 0 ]] || ((SECONDS > deadline)); do sleep 0.5; done
	event in-sync
}

# start_members CONFIG LOG_DIR [RUN ARGS...]: `$dir/logstore run` in each
# zone of the caller's zones, LOG_DIR/member-I-ZONE.log, each pid appended
# to the caller's pids.
start_members() {
	local config=$1 logs=$2 i
	shift 2
	for i in "${!zones[@]}"; do
		# Not through in_ns: a function in the background is a subshell,
		# and $! must be the member itself for SIGTERM to reach it.
		ip netns exec "$(ns_of "${zones[i]}")" env LOGSTORE_RACK="${zones[i]}" \
			"$dir/logstore" run -c "$config" "$@" >"$logs/member-$i-${zones[i]}.log" 2>&1 &
		pids+=($!)
	done
}

# start_input TOPIC LOG: `$dir/labclient produce` writes $dir/capture.jsonl
# into TOPIC at ZONELAB_RATE records/s in the background; its pid goes to
# the caller's producer and helpers. Not through produce(): $! must be the
# producer itself for SIGTERM to reach it. (kafka-go's Writer, in `logstore
# replay`, would give up while a leader is away.)
start_input() {
	"$dir/labclient" produce -brokers "$(bootstrap)" -topic "$1" -input "$dir/capture.jsonl" \
		-rate "$ZONELAB_RATE" >"$2" 2>&1 &
	producer=$!
	helpers+=" $producer"
}

# stop_input LOG: stops start_input's producer (SIGTERM: it waits for what
# it sent to be acknowledged); the caller's records becomes what it sent.
stop_input() {
	kill -TERM "$producer" 2>/dev/null || true
	wait "$producer" || {
		tail_logs "$1"
		die "the producer failed"
	}
	event produced
	records=$(sed -nE 's/^produced ([0-9]+) records.*/\1/p' "$1")
}

# wait_members LOG_DIR: waits for start_members' members (and a churn
# run's); the caller's failed becomes 1 if one failed (its log's end is
# shown).
wait_members() {
	local i
	for i in "${!pids[@]}"; do
		[[ -n ${pids[i]} ]] || continue # stopped already
		wait "${pids[i]}" || {
			warn "member $i (${zones[i]}) failed"
			tail_logs "$1/member-$i-${zones[i]}.log"
			failed=1
		}
	done
	pids=()
}

cmd_run() {
	local records="" per_zone=4 rf=3 members=az-a,az-b,az-c restart=0 out="" produce_out=0 churn=0 protocol=${ZONELAB_GROUP_PROTOCOL:-classic}
	while (($#)); do
		case $1 in
		--records) records=$2 && shift ;;
		--per-zone) per_zone=$2 && shift ;;
		--rf) rf=$2 && shift ;;
		--members) members=$2 && shift ;;
		--restart) restart=1 ;;
		--produce) produce_out=1 ;;
		--churn) churn=1 ;;
		--group-protocol) protocol=$2 && shift ;;
		--out) out=$2 && shift ;;
		*) die "run: unknown option '$1'" ;;
		esac
		shift
	done
	[[ $protocol == classic || $protocol == consumer ]] || die "run: --group-protocol (or ZONELAB_GROUP_PROTOCOL) is classic or consumer, not '$protocol'"
	((!churn || (!restart && !produce_out))) || die "run: --churn goes without --restart and --produce"
	((!churn)) || [[ $members == az-a,az-b,az-c ]] || die "run: --churn runs its own members (one per zone, then a fourth in az-a)"
	# A restart or churn run produces until it is stopped; this is only
	# its supply.
	local streaming=$((restart || churn))
	records=${records:-$((streaming ? ZONELAB_RATE * 400 : 120000))}
	kafka status >/dev/null 2>&1 || die "the lab is not up: $0 up"
	DIR=${out:-$ZL_STATE/runs/$(date -u +%Y%m%dT%H%M%SZ)}
	local dir=$DIR parts=$((per_zone * 3)) topic="zonelab-$(date -u +%H%M%S)-$$"
	local -a zones
	IFS=, read -r -a zones <<<"$members"
	local z
	for z in "${zones[@]}"; do index_of "$z" >/dev/null; done
	mkdir -p "$dir"
	say "run: $records records, topic $topic ($parts partitions, RF $rf), members in ${zones[*]}; results in $dir"
	(cd "$LOGSTORE_ROOT" && go build -o "$dir/logstore" ./cmd/logstore && go build -o "$dir/labclient" ./scripts/labclient)

	kafka_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$(bootstrap)" \
		--create --topic "$topic" --partitions "$parts" --replication-factor "$rf" >/dev/null
	capture "$parts" "$records" "$dir"
	((streaming)) || produce "$topic" "$dir"
	leaders "$topic" >"$dir/leaders.txt"
	if ((produce_out)); then
		run_produce "$dir" "$topic" "$records" "$parts" "$rf" "$restart" "$members"
		return
	fi
	# What the planner says is the best a balanced group can do here.
	"$dir/labclient" topology -brokers "$(bootstrap)" -topic "$topic" -members "$members" >"$dir/topology.json"
	"$dir/logstore" plan --topology "$dir/topology.json" --json >"$dir/plan.json"
	# shellcheck disable=SC2016 # logstore expands it, per member
	job_config "$dir/job.yaml" "$(bootstrap)" "$topic" "$topic" "$dir/out" '${LOGSTORE_RACK}'
	[[ $protocol == classic ]] || sed -i "/^kafka:\$/a\\  group_protocol: $protocol" "$dir/job.yaml"

	local -a pids=()
	local helpers="" i
	# Whatever happens, nothing this run started outlives it.
	# shellcheck disable=SC2329 # called by the trap
	stop_run() {
		local p z
		for p in "${pids[@]}" $helpers; do kill -TERM "$p" 2>/dev/null || true; done
		# And anything of this run's left in a zone, however it got there.
		for z in "${ZONES[@]}"; do
			for p in $(ns_pids "$(ns_of "$z")"); do
				[[ $(cmdline_of "$p") == "$dir/"* ]] && kill -TERM "$p" 2>/dev/null
			done
		done
		wait 2>/dev/null || true
	}
	EXIT_HOOKS+=(stop_run)

	start_sampling
	# --until now reads what is there; a restart or churn run streams and is
	# stopped (SIGTERM: flush, commit, leave) once the group has committed
	# it all.
	local -a mode=(--until now)
	((streaming)) && mode=()
	start_members "$dir/job.yaml" "$dir" "${mode[@]}"
	if ((restart)); then
		"$dir/labclient" isr -brokers "$(bootstrap)" -topic "$topic" >"$dir/isr.txt" 2>/dev/null &
		helpers+=" $!"
		local producer
		start_input "$topic" "$dir/produce.log"
		restart_az_a "$dir/isr.txt"
		# Keep producing until the restarted broker has been back in every
		# ISR for ZONELAB_AFTER seconds: that is the part being judged.
		sleep "$ZONELAB_AFTER"
		stop_input "$dir/produce.log"
		"$dir/labclient" lag -brokers "$(bootstrap)" -topic "$topic" -group "$topic" -timeout 180s
		event committed
		for i in "${!pids[@]}"; do kill -TERM "${pids[i]}"; done
	elif ((churn)); then
		run_churn "$topic"
	fi
	local failed=0
	wait_members "$dir"
	event end
	sleep 1 # one more sample after the end
	stop_run
	helpers=""
	counters_read >"$dir/kernel.txt"
	((failed == 0)) || die "a member failed; logs in $dir"
	rm -f "$dir/capture.jsonl"

	"$ARROW_PY" "$LOGSTORE_ROOT/scripts/verify_dataset.py" "$dir/out" >"$dir/verify.json" ||
		die "pyarrow could not read $dir/out"
	if ((churn)); then
		report_churn "$dir" "$records" "$parts" "$rf" "$protocol" "$topic"
	else
		report "$dir" "$records" "$parts" "$rf" "$restart" "$topic" "$protocol"
	fi
	kafka_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$(bootstrap)" \
		--delete --topic "$topic" >/dev/null 2>&1 || true
	unset 'EXIT_HOOKS[-1]'
}

# report DIR RECORDS PARTITIONS RF RESTART TOPIC PROTOCOL: the tables, and
# DIR/result.json for tests.
report() {
	"$ARROW_PY" - "$@" <<-'PY'
		import json, os, re, sys
		sys.path.insert(0, os.path.join(os.environ["LOGSTORE_ROOT"], "scripts"))
		import zonelab_samples
		d, n, parts, rf, restart, topic, protocol = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1", sys.argv[6], sys.argv[7]
		zones = ["az-a", "az-b", "az-c"]
		kernel = {}
		for line in open(os.path.join(d, "kernel.txt")):
		    to, frm, b = line.split()
		    kernel.setdefault(to, {})[frm] = int(b)
		members = {}
		for f in sorted(os.listdir(d)):
		    m = re.fullmatch(r"member-(\d+)-(az-\w)\.log", f)
		    if not m:
		        continue
		    log = open(os.path.join(d, f)).read()
		    rec = {"zone": m.group(2)}
		    fb = re.search(r"fetched bytes\s+(\d+) same-rack, (\d+) cross-rack", log)
		    rd = re.search(r"records read\s+(\d+)", log)
		    if fb:
		        rec["same"], rec["cross"] = int(fb.group(1)), int(fb.group(2))
		    rec["records"] = int(rd.group(1)) if rd else None
		    members[m.group(1)] = rec
		verify = json.load(open(os.path.join(d, "verify.json")))
		# Record i is at offset i // parts of partition i % parts.
		want = {str(p): len(range(p, n, parts)) for p in range(parts)}
		got = {p: s for p, s in verify["partitions"].items()}
		once = verify["rows"] == n and all(
		    got.get(p, {}).get("count") == c == got[p]["distinct"] and got[p]["min"] == 0 and got[p]["max"] == c - 1
		    for p, c in want.items())
		rows = []
		tot_same = tot_cross = 0
		print(f"\nzone lab: group_protocol {protocol}, {n:,} records, {parts} partitions, RF {rf}, leaders {open(os.path.join(d, 'leaders.txt')).read().strip()}")
		print("\n| zone | members | kernel: from az-a | from az-b | from az-c | same-zone | cross-zone | cross % | logstore: same-rack | cross-rack | cross % |")
		print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for z in zones:
		    k = kernel.get(z, {})
		    same = k.get(z, 0)
		    cross = sum(v for f, v in k.items() if f != z)
		    mem = [m for m in members.values() if m["zone"] == z]
		    ls = sum(m.get("same", 0) for m in mem)
		    lc = sum(m.get("cross", 0) for m in mem)
		    tot_same += same
		    tot_cross += cross
		    pct = lambda c, s: f"{100 * c / (c + s):.3f} %" if c + s else "–"
		    print(f"| {z} | {len(mem)} | {k.get('az-a', 0):,} | {k.get('az-b', 0):,} | {k.get('az-c', 0):,} | {same:,} | {cross:,} | {pct(cross, same)} | {ls:,} | {lc:,} | {pct(lc, ls)} |")
		    rows.append({"zone": z, "members": len(mem), "kernel_from": k, "kernel_same": same, "kernel_cross": cross,
		                 "logstore_same": ls, "logstore_cross": lc})
		total = tot_same + tot_cross
		share = tot_cross / total if total else 0
		out = kernel.get("outside", {})
		print(f"| all zones | {len(members)} | | | | {tot_same:,} | {tot_cross:,} | {100 * share:.3f} % | | | |")
		print(f"\nkernel: {100 * share:.3f} % of the {total:,} bytes the brokers' client ports sent into the zones crossed zones"
		      f" ({sum(out.values()):,} more went to the root namespace)")
		print(f"pyarrow: {verify['rows']:,} rows of {n:,}; every record exactly once: {'yes' if once else 'NO'}")
		plan = json.load(open(os.path.join(d, "plan.json")))
		print(f"planner (logstore plan on this topic and these members): {plan['local']} of {plan['total']} partitions can be read"
		      f" in the member's own zone ({100 * plan['local'] / plan['total']:.0f} %); the kernel saw {100 * (1 - share):.1f} % of bytes stay in zone")
		result = {"protocol": protocol, "records": n, "partitions": parts, "rf": rf, "topic": topic, "zones": rows, "members": members,
		          "kernel": kernel, "kernel_same": tot_same, "kernel_cross": tot_cross, "kernel_cross_share": share,
		          "exactly_once": once, "verify": verify, "plan_local": plan["local"], "plan_total": plan["total"]}
		if restart:
		    events = [l.split() for l in open(os.path.join(d, "events.txt"))]
		    t_start = int(events[0][1])
		    ev = {k: int(v) - t_start for k, v in events}
		    rel = lambda ms: (ms - t_start) / 1e3
		    samples = zonelab_samples.load(os.path.join(d, "samples.txt"), "az-a")
		    isr = [(rel(int(t)), int(c)) for t, c in (l.split() for l in open(os.path.join(d, "isr.txt")))]
		    # The ISR is whole again at the first sample after the restart that
		    # finds no under-replicated partition.
		    whole = next((t for t, c in isr if t > ev["restart"] / 1e3 and c == 0), None)
		    under = lambda t: zonelab_samples.at(isr, t)
		    per_s = []
		    print(f"\naz-a worker, per second by the kernel. az-a broker: stop at {ev['stop'] / 1e3:.1f} s, down at {ev['stopped'] / 1e3:.1f} s,"
		          f" started again at {ev['restart'] / 1e3:.1f} s, registered at {ev['registered'] / 1e3:.1f} s,"
		          f" every replica in sync again at {f'{whole:.1f} s' if whole is not None else 'never (during the run)'};"
		          f" producer stopped at {ev['produced'] / 1e3:.1f} s, all committed at {ev['committed'] / 1e3:.1f} s\n")
		    print("| t s | same-zone bytes/s | cross-zone bytes/s | cross % | under-replicated partitions |")
		    print("|---:|---:|---:|---:|---:|")
		    for a, b, same, cross in zonelab_samples.per_second(samples, "az-a"):
		        t = rel(b)
		        per_s.append({"t": round(t, 2), "dt": (b - a) / 1e3, "same": round(same), "cross": round(cross), "under_replicated": under(t)})
		        print(f"| {t:.1f} | {same:,.0f} | {cross:,.0f} | {100 * cross / (same + cross) if same + cross else 0:.1f} % | {under(t)} |")
		    after = [s for s in per_s if whole is not None and s["t"] > whole]
		    late = sum(s["cross"] * s["dt"] for s in after)
		    # Local again: the last second after the ISR was whole in which
		    # more than 10 KB/s (more than group and metadata chatter) came
		    # from other zones.
		    busy = [s["t"] for s in after if s["cross"] > 10_000]
		    back = (busy[-1] - whole) if busy else 0.0
		    if whole is not None:
		        print(f"\naz-a worker: cross-zone bytes after every replica was in sync again: ~{late:,.0f};"
		              f" last second with > 10 KB/s from other zones: {f'{back:.1f} s after' if busy else 'none'}")
		    result.update({"events": ev, "isr_whole_at": whole, "az_a_per_second": per_s,
		                   "az_a_cross_after_isr_whole": late, "az_a_local_again_after_isr_s": back})
		with open(os.path.join(d, "result.json"), "w") as f:
		    json.dump(result, f, indent=1)
	PY
}

main() {
	local cmd=${1:-}
	(($# > 0)) && shift
	case $cmd in
	once)
		# Leave a lab that was already up as it was.
		lab_exists || EXIT_HOOKS+=(cmd_down)
		cmd_up
		cmd_run "$@"
		;;
	--compare | compare)
		lab_exists || EXIT_HOOKS+=(cmd_down)
		cmd_up
		cmd_compare "$@"
		;;
	up) cmd_up ;;
	down) cmd_down ;;
	status) cmd_status ;;
	run) cmd_run "$@" ;;
	counters)
		if [[ ${1:-} == --zero ]]; then counters_zero; fi
		counters_table in
		echo
		counters_table out
		;;
	exec) cmd_exec "$@" ;;
	kafka) kafka "$@" ;;
	*) usage ;;
	esac
}

main "$@"
