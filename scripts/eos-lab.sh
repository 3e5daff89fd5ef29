#!/usr/bin/env bash
# The exactly-once lab: three logstore members (racks az-a, az-b, az-c, by
# LOGSTORE_RACK) read a topic of many partitions and write every row to an
# Iceberg table (SQLite catalog, the S3 server) and to a Kafka topic with
# sinks.kafka.delivery exactly_once, while a producer writes generated
# logs at a steady rate. It shows whether the members keep up and how long
# a record takes to become visible:
#
#   lag      the group's lag (records not committed) every EOSLAB_EVERY
#            seconds while the producer runs: its maximum, and its trend,
#            the least-squares slope over the second half (records/s the
#            members fall behind by; near 0 when the lag is bounded)
#   latency  produce to visible: a read_committed consumer of the output
#            topic (labclient visible) takes each row's produced_at (the
#            input record's timestamp, stamped by the producer when it sends
#            the record) from its read time; p50 and p99 over the records
#            produced after the warm-up. It also tells each input record
#            by its source headers: every record must be there once.
#   cost     CPU-seconds of the members (and of the producer, the consumer
#            and the brokers, apart) per million records, from /proc, over
#            the steady window (warm-up to the producer's stop), and the
#            machine's load then.
#   files    the table's data files at the end of the run (S3 server's
#            folder): a member's cycle stores one per table partition.
#
#   scripts/eos-lab.sh [--partitions 600] [--rate 20000] [--duration 5m]
#                      [--max-age 10s] [--commit-interval D]
#                      [--delivery exactly_once[,at_least_once...]]
#                      [--group-protocol classic|consumer]
#                      [--out DIR] [--dry-run]
#
# --delivery takes a list: the modes run one after the other in the same
# run, each on new topics, e.g. `--delivery at_least_once,exactly_once`
# puts exactly once beside its baseline; the table then gives each mode's
# cost as a ratio to the first. --commit-interval sets sinks.commit_interval
# (the job's default when not given). --group-protocol sets
# kafka.group_protocol: consumer runs the members under KIP-848's protocol
# (the brokers assign; the members' commits carry the member epoch).
# --dry-run prints the plan and exits.
# A duration is seconds, or a number with s or m.
#
# Results: DIR/results.jsonl (one line per mode) and DIR/table.md (default
# $LOGSTORE_STATE/eos-lab/runs/<time>); the members' configs and logs, the
# lag samples and the consumer's progress are kept there. The topics, the
# table's files and its catalog are removed at the end of each mode.
# Minutes of load on the cluster (not in CI); figures in BENCHMARKS.md.
#
# Knobs (environment; a flag wins):
#   EOSLAB_PARTITIONS      input partitions (600)
#   EOSLAB_RATE            records/s (20000)
#   EOSLAB_DURATION        how long the producer runs (5m)
#   EOSLAB_MAX_AGE         batch.max_age (10s)
#   EOSLAB_COMMIT_INTERVAL sinks.commit_interval (the job's default)
#   EOSLAB_DELIVERY        the modes (exactly_once)
#   EOSLAB_GROUP_PROTOCOL  kafka.group_protocol: classic or consumer (classic)
#   EOSLAB_WARMUP          seconds after the producer's start not measured (30)
#   EOSLAB_EVERY           seconds between lag samples (5)
#   EOSLAB_DRAIN           how long to wait, after the producer stops, for
#                          every record to be visible (the duration, 3 x
#                          max_age and a minute)
#   EOSLAB_OUT_PARTITIONS  partitions of the output topic (12)
#   EOSLAB_PORT            first metrics port; members use PORT+1 to PORT+3 (9580)
set -euo pipefail

LOGSTORE_TOOL=eos-lab
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/bench-lib.sh
source "$LOGSTORE_ROOT/scripts/bench-lib.sh"

RACKS=(az-a az-b az-c)
BUCKET=eoslab

kafka() { bash "$LOGSTORE_ROOT/scripts/kafka-cluster.sh" "$@"; }
topics() { kafka tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$BROKERS" "$@"; }

# seconds D: D (N, Ns or Nm) in whole seconds.
seconds() {
	case $1 in
	*m) [[ ${1%m} =~ ^[0-9]+$ ]] && echo $((${1%m} * 60)) && return ;;
	*s) [[ ${1%s} =~ ^[0-9]+$ ]] && echo "${1%s}" && return ;;
	*) [[ $1 =~ ^[0-9]+$ ]] && echo "$1" && return ;;
	esac
	die "'$1' is not a duration: give seconds, or a number with s or m (90, 90s, 5m)"
}

parse() {
	PARTITIONS=${EOSLAB_PARTITIONS:-600}
	RATE=${EOSLAB_RATE:-20000}
	DURATION=${EOSLAB_DURATION:-5m}
	MAX_AGE=${EOSLAB_MAX_AGE:-10s}
	COMMIT_INTERVAL=${EOSLAB_COMMIT_INTERVAL:-}
	DELIVERY=${EOSLAB_DELIVERY:-exactly_once}
	GROUP_PROTOCOL=${EOSLAB_GROUP_PROTOCOL:-classic}
	WARMUP=${EOSLAB_WARMUP:-30}
	EVERY=${EOSLAB_EVERY:-5}
	OUT_PARTITIONS=${EOSLAB_OUT_PARTITIONS:-12}
	PORT=${EOSLAB_PORT:-9580}
	DRAIN=${EOSLAB_DRAIN:-}
	DIR="" DRY=""
	while (($#)); do
		case $1 in
		--partitions | --rate | --duration | --max-age | --commit-interval | --delivery | --group-protocol | --out)
			(($# >= 2)) || die "$1 needs a value"
			case $1 in
			--partitions) PARTITIONS=$2 ;;
			--rate) RATE=$2 ;;
			--duration) DURATION=$2 ;;
			--max-age) MAX_AGE=$2 ;;
			--commit-interval) COMMIT_INTERVAL=$2 ;;
			--delivery) DELIVERY=$2 ;;
			--group-protocol) GROUP_PROTOCOL=$2 ;;
			--out) DIR=$2 ;;
			esac
			shift
			;;
		--dry-run) DRY=1 ;;
		-h | --help) usage ;;
		*) die "unknown option '$1' (see scripts/eos-lab.sh --help)" ;;
		esac
		shift
	done
	[[ $PARTITIONS =~ ^[1-9][0-9]*$ ]] || die "--partitions $PARTITIONS: want a positive whole number"
	[[ $RATE =~ ^[1-9][0-9]*$ ]] || die "--rate $RATE: want records/s, a positive whole number"
	[[ $OUT_PARTITIONS =~ ^[1-9][0-9]*$ ]] || die "EOSLAB_OUT_PARTITIONS $OUT_PARTITIONS: want a positive whole number"
	DURATION_S=$(seconds "$DURATION")
	WARMUP=$(seconds "$WARMUP")
	EVERY=$(seconds "$EVERY")
	MAX_AGE_S=$(seconds "$MAX_AGE")
	DRAIN_S=$(seconds "${DRAIN:-$((DURATION_S + 3 * MAX_AGE_S + 60))}")
	((DURATION_S > WARMUP)) || die "--duration $DURATION must be longer than the warm-up (EOSLAB_WARMUP=${WARMUP}s)"
	((EVERY > 0)) || die "EOSLAB_EVERY must be at least 1 s"
	[[ -z $COMMIT_INTERVAL ]] || seconds "$COMMIT_INTERVAL" >/dev/null
	[[ $GROUP_PROTOCOL == classic || $GROUP_PROTOCOL == consumer ]] || die "--group-protocol $GROUP_PROTOCOL: want classic or consumer"
	IFS=, read -ra MODES <<<"$DELIVERY"
	((${#MODES[@]} > 0)) || die "--delivery: give at least one of exactly_once, at_least_once"
	local m
	for m in "${MODES[@]}"; do
		[[ $m == exactly_once || $m == at_least_once ]] || die "--delivery $m: want exactly_once or at_least_once (comma-separated)"
	done
}

plan() {
	say "plan: ${PARTITIONS} partitions, ${RATE} records/s for ${DURATION_S} s (warm-up ${WARMUP} s), batch.max_age ${MAX_AGE}," \
		"sinks.commit_interval ${COMMIT_INTERVAL:-default}, delivery ${MODES[*]}, group protocol ${GROUP_PROTOCOL}, lag every ${EVERY} s," \
		"drain up to ${DRAIN_S} s, output topic ${OUT_PARTITIONS} partitions"
}

# member_config FILE N: member N's job: the demo's columns and the input
# record's timestamp, into the table and the output topic.
member_config() {
	local file=$1 n=$2 table
	table=eoslab.$(tr -- '-' '_' <<<"$TOPIC")
	cat >"$file" <<-EOF
		kafka:
		  brokers: [$BROKERS]
		  topics: [$TOPIC]
		  group: $TOPIC
		  group_protocol: $GROUP_PROTOCOL
		  start_offset: earliest
		rack:
		  static: \${LOGSTORE_RACK}
		  providers: [static]
		schema:
		  format: json
		  columns:
		$(demo_columns)
		    - {name: produced_at, type: timestamp, source: kafka.timestamp}
		batch:
		  max_age: $MAX_AGE
		sinks:
		  ${COMMIT_INTERVAL:+commit_interval: $COMMIT_INTERVAL}
		  kafka:
		    topic: $TOPIC-out
		    delivery: $MODE
		  iceberg:
		    table: $table
		    catalog: {type: sql, uri: $RUN/catalog.db, warehouse: "s3://$BUCKET/$TOPIC"}
		    partition_by: [{column: ts, transform: hour}]
		dead_letter:
		  on_error: dead_letter
		  topic: $TOPIC-dlq
		metrics:
		  listen: 127.0.0.1:$((PORT + n))
		log:
		  level: info
		  format: text
	EOF
}

# scrape N METRIC: the sum of METRIC's series on member N's /metrics (0
# while it does not answer).
scrape() {
	local page
	page=$(curl -fsS --max-time 5 "http://127.0.0.1:$((PORT + $1))/metrics" 2>/dev/null) || page=""
	awk -v m="$2" '$1 == m || index($1, m "{") == 1 { s += $2 } END { printf "%d\n", s }' <<<"$page"
}

# cpu_ticks PID: user + system clock ticks the process has used (0 once gone).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

# machine_ticks: busy and total ticks of every core, from /proc/stat.
machine_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }

broker_pids() {
	local n
	for n in 1 2 3; do cat "$LOGSTORE_STATE/kafka/node-$n/pid" 2>/dev/null || true; done
}

# snapshot NAME: at this moment, the CPU ticks of the members, the
# producer, the consumer, the brokers and the machine, and the members'
# records, as NAME_* shell variables.
snapshot() {
	local name=$1 n p members=0 records=0 brokers=0
	for n in 1 2 3; do
		members=$((members + $(cpu_ticks "${PIDS[n]}")))
		records=$((records + $(scrape "$n" logstore_records_total)))
	done
	for p in $(broker_pids); do brokers=$((brokers + $(cpu_ticks "$p"))); done
	printf -v "${name}_ms" %s "$(now_ms)"
	printf -v "${name}_members" %s "$members"
	printf -v "${name}_records" %s "$records"
	printf -v "${name}_producer" %s "$(cpu_ticks "$PRODUCER")"
	printf -v "${name}_consumer" %s "$(cpu_ticks "$CONSUMER")"
	printf -v "${name}_brokers" %s "$brokers"
	printf -v "${name}_machine" %s "$(machine_ticks)"
}

# wait_assigned TIMEOUT_S: until the members hold every partition.
wait_assigned() {
	local deadline=$((SECONDS + $1)) n sum
	while ((SECONDS < deadline)); do
		sum=0
		for n in 1 2 3; do sum=$((sum + $(scrape "$n" logstore_assigned_partitions))); done
		((sum == PARTITIONS)) && return 0
		sleep 1
	done
	return 1
}

# visible_distinct: the consumer's last count of input records seen.
visible_distinct() { tail -n 1 "$RUN/visible.txt" 2>/dev/null | awk '{ print $3 + 0 }'; }

run_mode() {
	MODE=$1
	TOPIC="eoslab-$(date -u +%H%M%S)-$$-${MODE%%_*}"
	RUN="$DIR/$MODE"
	mkdir -p "$RUN" "$LOGSTORE_STATE/s3/data/$BUCKET"
	: >"$RUN/visible.txt"
	CREATED+=("$TOPIC" "$TOPIC-out" "$TOPIC-dlq")
	topics --create --topic "$TOPIC" --partitions "$PARTITIONS" --replication-factor 3 >/dev/null
	topics --create --topic "$TOPIC-out" --partitions "$OUT_PARTITIONS" --replication-factor 3 >/dev/null
	topics --create --topic "$TOPIC-dlq" --partitions 3 --replication-factor 3 >/dev/null
	say "$MODE: topic $TOPIC; logs in $RUN"

	local n start_ms
	"$DIR/labclient" lag -brokers "$BROKERS" -topic "$TOPIC" -group "$TOPIC" -every "${EVERY}s" >"$RUN/lag.txt" 2>"$RUN/lag.log" &
	LAGWATCH=$!
	PIDS=("")
	for n in 1 2 3; do
		member_config "$RUN/m$n.yaml" "$n"
		LOGSTORE_RACK=${RACKS[n - 1]} LOGSTORE_MEMBER=m$n "$DIR/logstore" run -c "$RUN/m$n.yaml" >"$RUN/m$n.log" 2>&1 &
		PIDS[n]=$!
	done
	wait_assigned 180 || {
		tail_logs "$RUN/m1.log"
		die "$MODE: the three members did not share the $PARTITIONS partitions within 180 s; logs in $RUN"
	}
	local load
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	# The consumer first, so it reads the first rows as they become visible.
	start_ms=$(($(now_ms) + 1000))
	"$DIR/labclient" visible -brokers "$BROKERS" -topic "$TOPIC-out" -column produced_at \
		-progress "$RUN/visible.txt" -from $((start_ms + WARMUP * 1000)) >"$RUN/visible.json" 2>"$RUN/visible.log" &
	CONSUMER=$!
	sleep 1
	start_ms=$(now_ms)
	"$DIR/grouplab" produce -now -brokers "$BROKERS" -topic "$TOPIC" -partitions "$PARTITIONS" -rate "$RATE" >"$RUN/produce.log" 2>&1 &
	PRODUCER=$!
	sleep "$WARMUP"
	snapshot t1
	sleep $((DURATION_S - WARMUP))
	snapshot t2
	# A member that stopped while the producer ran (a crash, or a signal
	# from outside the lab) makes the figures meaningless: say so.
	local early=""
	for n in 1 2 3; do kill -0 "${PIDS[n]}" 2>/dev/null || early+="m$n "; done
	[[ -z $early ]] || warn "$MODE: member(s) ${early% } stopped before the producer did; see $RUN/m*.log"
	kill -TERM "$PRODUCER"
	wait "$PRODUCER" || {
		tail_logs "$RUN/produce.log"
		die "$MODE: the producer failed"
	}
	local stop_ms produced produced_s
	stop_ms=$(now_ms)
	PRODUCER=""
	produced=$(sed -nE 's/^produced ([0-9]+) records.*/\1/p' "$RUN/produce.log")
	# The rate by the producer's own clock: on the loaded machine the
	# lab's window once stretched from 90 to 176 s while the producer
	# counted 121 s.
	produced_s=$(sed -nE 's/^produced [0-9]+ records into .* in ([0-9.]+) s$/\1/p' "$RUN/produce.log")
	# What was produced last waits up to max_age for its batch, then for
	# its cycle; members that fell behind work off their backlog first.
	local deadline=$((SECONDS + DRAIN_S))
	until (($(visible_distinct) >= produced)) || ((SECONDS >= deadline)); do sleep 1; done
	local drained_ms drained=true
	drained_ms=$(now_ms)
	(($(visible_distinct) >= produced)) || drained=false
	kill -TERM "$CONSUMER" "$LAGWATCH"
	wait "$CONSUMER" || warn "$MODE: the consumer failed; see $RUN/visible.log"
	wait "$LAGWATCH" || true
	CONSUMER="" LAGWATCH=""
	for n in 1 2 3; do kill -TERM "${PIDS[n]}" 2>/dev/null || true; done
	for n in 1 2 3; do
		wait "${PIDS[n]}" || warn "$MODE: member m$n exited with an error; see $RUN/m$n.log"
	done
	PIDS=("")

	# The table's data files, whole run (the S3 server keeps an object as
	# a file of its key).
	local data_files
	data_files=$(find "$LOGSTORE_STATE/s3/data/$BUCKET/$TOPIC" -path '*/data/*' -name '*.parquet' 2>/dev/null | wc -l)
	local hz cores bt1 tt1 bt2 tt2
	hz=$(getconf CLK_TCK)
	cores=$(nproc)
	read -r bt1 tt1 <<<"$t1_machine"
	read -r bt2 tt2 <<<"$t2_machine"
	jq -cn --arg mode "$MODE" --arg load "$load" --argjson parts "$PARTITIONS" --argjson rate "$RATE" \
		--argjson duration "$DURATION_S" --arg max_age "$MAX_AGE" --arg ci "${COMMIT_INTERVAL:-default}" --arg gp "$GROUP_PROTOCOL" \
		--argjson produced "$produced" --argjson produced_s "$produced_s" --argjson start "$start_ms" --argjson stop "$stop_ms" --argjson drained "$drained_ms" \
		--argjson window $(((t2_ms - t1_ms))) --argjson records $((t2_records - t1_records)) --argjson hz "$hz" \
		--argjson members $((t2_members - t1_members)) --argjson producer $((t2_producer - t1_producer)) \
		--argjson consumer $((t2_consumer - t1_consumer)) --argjson brokers $((t2_brokers - t1_brokers)) \
		--argjson busy $((bt2 - bt1)) --argjson total $((tt2 - tt1)) --argjson cores "$cores" \
		--argjson drained_all "$drained" --argjson data_files "$data_files" --arg early "${early% }" --slurpfile visible "$RUN/visible.json" --rawfile lag "$RUN/lag.txt" '
		def per_m(t): if $records > 0 then t / $hz / $records * 1e6 else null end;
		# The lag while the producer ran, and its least-squares slope over the second half.
		($lag | split("\n") | map(split(" ") | select(length == 2 and .[1] != "-") | map(tonumber))
			| map(select(.[0] >= $start and .[0] <= $stop))) as $s
		| ($s | map(select(.[0] >= ($start + $stop) / 2))) as $h
		| ($h | length) as $n
		| (if $n >= 2 then
			($h | map(.[0] / 1000) | add / $n) as $mx | ($h | map(.[1]) | add / $n) as $my
			| ($h | map((.[0] / 1000 - $mx) * (.[1] - $my)) | add) / ($h | map((.[0] / 1000 - $mx) | . * .) | add)
		  else null end) as $slope
		| {mode: $mode, partitions: $parts, rate: $rate, duration_s: $duration, max_age: $max_age, commit_interval: $ci, group_protocol: $gp,
		   produced: $produced, produced_per_s: ($produced / $produced_s),
		   lag_max: ($s | map(.[1]) | max), lag_end: ($s | last | .[1]), lag_slope_per_s: $slope,
		   lag_samples: ($s | length), drain_s: (($drained - $stop) / 1000), drained: $drained_all,
		   visible: $visible[0],
		   window_s: ($window / 1000), records_in_window: $records,
		   members_cpu_s_per_m: per_m($members), members_cores: ($members / $hz / ($window / 1000)),
		   # The producer per record it sent, the others per record the members read.
		   producer_cpu_s_per_m: ($producer / $hz / ($produced / $produced_s * $window / 1000) * 1e6), consumer_cpu_s_per_m: per_m($consumer),
		   brokers_cpu_s_per_m: per_m($brokers), brokers_cores: ($brokers / $hz / ($window / 1000)),
		   machine_busy_cores: ($busy / $total * $cores),
		   others_cores: ($busy / $total * $cores - ($members + $producer + $consumer + $brokers) / $hz / ($window / 1000)),
		   table_data_files: $data_files, loadavg_at_start: $load, members_stopped_early: $early}' >>"$DIR/results.jsonl"
	cleanup_mode
}

# cleanup_mode: the mode's topics, and its table's files and catalog.
cleanup_mode() {
	local t
	for t in "${CREATED[@]}"; do
		topics --delete --topic "$t" >/dev/null 2>&1 || warn "could not delete topic $t"
	done
	CREATED=()
	if [[ -n ${TOPIC:-} ]]; then
		rm -rf "${LOGSTORE_STATE:?}/s3/data/$BUCKET/$TOPIC"
	fi
	[[ -z ${RUN:-} ]] || rm -f "$RUN/catalog.db"
}

cleanup() {
	local p
	for p in "${PIDS[@]}" "${PRODUCER:-}" "${CONSUMER:-}" "${LAGWATCH:-}"; do
		[[ -n $p ]] && kill -TERM "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	cleanup_mode
}

report() {
	jq -rs '
		def f(d): if . == null then "–" else (. * pow(10; d) | round / pow(10; d) | tostring) end;
		def n: if . == null then "–" else (round | tostring | explode | reverse | [_nwise(3)] | map(reverse | implode) | reverse | join(",")) end;
		.[0] as $b
		| "| delivery | produced/s | lag max | lag end | lag trend, records/s (of the rate) | drained in, s | produce→visible p50 / p99, ms | every record once | members CPU-s per M | vs \($b.mode) | members, cores | producer CPU-s per M | brokers CPU-s per M | table data files | machine busy, cores (others) | load at start |",
		  "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
		  (.[] | "| \(.mode)\(if (.members_stopped_early // "") != "" then " (\(.members_stopped_early) stopped early)" else "" end) | \(.produced_per_s | n) | \(.lag_max | n) | \(.lag_end | n) | \(.lag_slope_per_s | f(0)) (\(if .lag_slope_per_s == null then "–" else (.lag_slope_per_s / .rate * 100 | f(1)) + " %" end)) | \(.drain_s | f(1))\(if .drained == false then " (gave up)" else "" end) | \(.visible.p50_ms | n) / \(.visible.p99_ms | n) | \(if .visible.distinct == .produced and .visible.records == .produced then "yes" elif .drained == false then "not all within the drain: \(.visible.distinct | n) of \(.produced | n)" else "NO: \(.visible.records | n) read, \(.visible.distinct | n) distinct of \(.produced | n)" end) | \(.members_cpu_s_per_m | f(2)) | \(if $b.members_cpu_s_per_m then (.members_cpu_s_per_m / $b.members_cpu_s_per_m | f(2)) + "×" else "–" end) | \(.members_cores | f(2)) | \(.producer_cpu_s_per_m | f(2)) | \(.brokers_cpu_s_per_m | f(2)) | \(.table_data_files | n) | \(.machine_busy_cores | f(2)) (\(.others_cores | f(2))) | \(.loadavg_at_start) |")
	' "$DIR/results.jsonl"
}

main() {
	parse "$@"
	plan
	[[ -z $DRY ]] || exit 0
	kafka status >/dev/null 2>&1 || die "the Kafka cluster is not up: scripts/kafka-cluster.sh start"
	bash "$LOGSTORE_ROOT/scripts/s3-server.sh" status >/dev/null 2>&1 || die "the S3 server is not up: scripts/s3-server.sh start"
	need curl jq
	eval "$(bash "$LOGSTORE_ROOT/scripts/s3-server.sh" env)"
	BROKERS=$(kafka bootstrap)
	DIR=${DIR:-$LOGSTORE_STATE/eos-lab/runs/$(date -u +%Y%m%dT%H%M%SZ)}
	mkdir -p "$DIR"
	: >"$DIR/results.jsonl"
	(cd "$LOGSTORE_ROOT" && go build -o "$DIR/logstore" ./cmd/logstore && go build -o "$DIR/labclient" ./scripts/labclient &&
		go build -o "$DIR/grouplab" ./scripts/grouplab) || die "build failed"
	PIDS=("") CREATED=() PRODUCER="" CONSUMER="" LAGWATCH=""
	trap cleanup EXIT
	local m
	for m in "${MODES[@]}"; do run_mode "$m"; done
	{
		echo
		echo "$PARTITIONS partitions, $RATE records/s for $DURATION_S s, batch.max_age $MAX_AGE, sinks.commit_interval ${COMMIT_INTERVAL:-default}, kafka.group_protocol ${GROUP_PROTOCOL}; CPU over the ${WARMUP} s .. ${DURATION_S} s window, per million records the members read (the producer: per million it sent)"
		echo
		report
	} | tee "$DIR/table.md"
	jq -se 'all(.visible.distinct == .produced)' "$DIR/results.jsonl" >/dev/null || die "not every record reached the output topic once; see $DIR"
}

main "$@"
