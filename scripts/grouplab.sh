#!/usr/bin/env bash
# The group lab: logstore members as separate processes against the
# three-rack cluster (scripts/kafka-cluster.sh) and the S3 server
# (scripts/s3-server.sh), while members join, restart and leave.
#
#   scripts/grouplab.sh run [--partitions 24] [--rate 16000] [--set KEY=VALUE]...
#                           [--label NAME] [--out DIR] [--quick]
#   scripts/grouplab.sh scale [--partitions 600] [--rf 3] [--idle 30] [--set KEY=VALUE]...
#                             [--label NAME] [--out DIR]
#
# `run` creates a topic (RF 3), starts three members (racks az-a, az-b,
# az-c) with the default batch settings (files at 128 MiB or 5 minutes)
# writing Parquet to the S3 server, and a producer writing generated logs at
# --rate records/s, record i to partition i % partitions. scripts/grouplab
# samples each member's /metrics every 100 ms (logstore_records_total,
# _group_generation, _rebalances_total, _assigned_partitions) and notes
# each new Parquet file. Once the group is steady, the events, each
# GROUPLAB_SETTLE seconds apart:
#
#   join     a fourth member (az-a) starts
#   restart  member 2 (az-b) gets SIGTERM, as a rolling deploy sends it,
#            and starts again GROUPLAB_DOWN seconds after it has exited
#   leave    the fourth member gets SIGTERM
#
# then the producer stops, every member gets SIGTERM ("shutdown"), one
# more member reads what they had not (--until now), and the group must
# have committed the end of every partition. The table gives per event the
# longest time each member that stayed saw its records counter stand still
# (beside the same in the steady window before the first event), the
# generations and rebalances they went through, how long a member took to
# stop, and the files written; then pyarrow reads the output back
# (scripts/verify_dataset.py) and says whether every record is there
# exactly once. Exits non-zero when it is not.
#
# `scale` measures one member of a group on a topic of --partitions
# partitions with no traffic: its CPU-seconds per wall second once it owns
# every partition (over --idle seconds, from /proc, its metrics not
# scraped meanwhile), then the time a
# rebalance takes when a second member joins and when it leaves (from the
# second member's start, or its SIGTERM, to every partition assigned again
# in one generation, by the members' metrics).
#
# --quick is the short run for CI, about a minute and a half: 12 partitions,
# 2,000 records/s, 5 s of steady state and 8 s between events (the
# GROUPLAB_* knobs still win). Its standstills mean little on a busy
# machine; what it asserts is every record exactly once (the exit status).
#
# --set KEY=VALUE adds a key to every member's config (KEY is section.key,
# e.g. kafka.group_protocol=consumer); ${LOGSTORE_MEMBER} in VALUE is the
# member's name, m1 to m4, which a restart keeps:
# --set 'kafka.group_instance_id=${LOGSTORE_MEMBER}'. --label names the
# run in the table, to put modes side by side.
#
# Results: DIR/result.json and DIR/table.md (default
# $LOGSTORE_STATE/grouplab/runs/<time>). The members' logs, configs, the
# samples and events are kept there too. Uses the shared cluster: run it
# under `flock /tmp/logstore-it.lock` when other tests may restart brokers.
#
# Knobs (environment):
#   GROUPLAB_STEADY   seconds of steady state before the first event (25)
#   GROUPLAB_SETTLE   seconds between events (25)
#   GROUPLAB_DOWN     seconds a restarted member stays down (5)
#   GROUPLAB_PORT     first metrics port; members use PORT+1 to PORT+4 (9480)
#   GROUPLAB_KEEP     set: keep the output of a run that verified (it is kept
#                     when it did not)
set -euo pipefail

LOGSTORE_TOOL=grouplab
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/bench-lib.sh
source "$LOGSTORE_ROOT/scripts/bench-lib.sh"

# What the caller set, for --quick to leave alone.
GROUPLAB_STEADY_SET="${GROUPLAB_STEADY:-}"
GROUPLAB_SETTLE_SET="${GROUPLAB_SETTLE:-}"
GROUPLAB_STEADY="${GROUPLAB_STEADY:-25}"
GROUPLAB_SETTLE="${GROUPLAB_SETTLE:-25}"
GROUPLAB_DOWN="${GROUPLAB_DOWN:-5}"
GROUPLAB_PORT="${GROUPLAB_PORT:-9480}"
ARROW_PY="$LOGSTORE_CACHE/venv/bin/python"
RACKS=(az-a az-b az-c az-a) # members m1..m4

kafka() { bash "$LOGSTORE_ROOT/scripts/kafka-cluster.sh" "$@"; }
bootstrap() { kafka bootstrap; }
topics() { kafka tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$(bootstrap)" "$@"; }

event() { echo "$1 $(now_ms)" >>"$DIR/events.txt"; }

# member_config FILE N: member N's job, the bench's columns, default batch
# settings, Parquet to the S3 server, its own metrics port, then --set keys.
member_config() {
	local file=$1 n=$2 kv key section value
	cat >"$file" <<-EOF
		kafka:
		  brokers: [$(bootstrap)]
		  topics: [$TOPIC]
		  group: $TOPIC
		  start_offset: earliest
		rack:
		  static: ${RACKS[n - 1]}
		  providers: [static]
		  follower_fetching: auto
		schema:
		  format: json
		  columns:
		$(demo_columns)
		sinks:
		  files:
		    url: s3://$BUCKET/$TOPIC
		    partition_by:
		      - {name: dt, column: ts, format: "2006-01-02"}
		      - {name: hour, column: ts, format: "15"}
		    s3:
		      endpoint: $AWS_ENDPOINT_URL_S3
		dead_letter:
		  on_error: dead_letter
		  files: true
		metrics:
		  listen: 127.0.0.1:$((GROUPLAB_PORT + n))
		log:
		  level: info
		  format: text
	EOF
	for kv in "${SETS[@]}"; do
		key=${kv%%=*} value=${kv#*=}
		section=${key%%.*} key=${key#*.}
		[[ $section != "$key" && -n $key ]] || die "--set $kv: want section.key=value"
		if grep -q "^$section:$" "$file"; then
			# The first line of the section, so a key given twice is refused
			# by logstore's strict decoding instead of one copy winning.
			awk -v s="$section:" -v line="  $key: $value" '{ print } $0 == s { print line }' "$file" >"$file.new"
			mv "$file.new" "$file"
		else
			printf '%s:\n  %s: %s\n' "$section" "$key" "$value" >>"$file"
		fi
	done
}

# start_member N: starts member mN in the background; PIDS[N] is its pid.
start_member() {
	local n=$1
	LOGSTORE_MEMBER=m$n "$DIR/logstore" run -c "$DIR/m$n.yaml" >>"$DIR/m$n.log" 2>&1 &
	PIDS[n]=$!
}

# stop_member N NAME: SIGTERM, as Kubernetes sends it; waits for the exit
# and notes NAME-stopped.
stop_member() {
	local n=$1
	event "$2"
	kill -TERM "${PIDS[n]}"
	wait "${PIDS[n]}" || {
		tail_logs "$DIR/m$n.log"
		die "member m$n failed to stop cleanly"
	}
	PIDS[n]=""
	event "$2-stopped"
}

# setup LABEL OUT PARTITIONS RF: the run's folder, binaries, topic, bucket,
# and a trap that stops whatever the run started.
setup() {
	kafka status >/dev/null 2>&1 || die "the Kafka cluster is not up: scripts/kafka-cluster.sh start"
	bash "$LOGSTORE_ROOT/scripts/s3-server.sh" status >/dev/null 2>&1 || die "the S3 server is not up: scripts/s3-server.sh start"
	[[ -x $ARROW_PY ]] || die "no pyarrow venv at $ARROW_PY: scripts/setup.sh"
	eval "$(bash "$LOGSTORE_ROOT/scripts/s3-server.sh" env)"
	LABEL=$1
	DIR=${2:-$LOGSTORE_STATE/grouplab/runs/$(date -u +%Y%m%dT%H%M%SZ)}
	TOPIC="grouplab-$(date -u +%H%M%S)-$$"
	BUCKET=grouplab
	# The S3 server's posix backend: a bucket is a folder, an object a file.
	OUTPUT="$LOGSTORE_STATE/s3/data/$BUCKET/$TOPIC"
	mkdir -p "$DIR" "$LOGSTORE_STATE/s3/data/$BUCKET"
	: >"$DIR/events.txt"
	: >"$DIR/samples.txt"
	(cd "$LOGSTORE_ROOT" && go build -o "$DIR/logstore" ./cmd/logstore && go build -o "$DIR/labclient" ./scripts/labclient &&
		go build -o "$DIR/grouplab" ./scripts/grouplab) || die "build failed"
	topics --create --topic "$TOPIC" --partitions "$3" --replication-factor "$4" >/dev/null
	local n
	for n in 1 2 3 4; do member_config "$DIR/m$n.yaml" "$n"; done
	PIDS=("" "" "" "" "")
	HELPERS=()
	trap cleanup EXIT
}

cleanup() {
	local p
	for p in "${PIDS[@]}" "${HELPERS[@]}"; do
		[[ -n $p ]] && kill -TERM "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	topics --delete --topic "$TOPIC" >/dev/null 2>&1 || true
}

sampler() {
	local n urls=()
	for n in 1 2 3 4; do urls+=("m$n=http://127.0.0.1:$((GROUPLAB_PORT + n))/metrics"); done
	"$DIR/grouplab" sample -every 100ms -out "$DIR/samples.txt" -files "$OUTPUT" "${urls[@]}" 2>>"$DIR/sampler.log" &
	HELPERS+=($!)
}

# wait_assigned TOTAL TIMEOUT MEMBER...: until the members' last samples
# add up to TOTAL assigned partitions, all in one generation; prints the
# time it was first seen. Under kafka.group_protocol=consumer (KIP-848)
# every member has an epoch of its own: there the members must hold a
# balanced share each (the broker's assignor spreads evenly) instead.
wait_assigned() {
	local total=$1 timeout=$2 deadline epochs=0
	shift 2
	[[ " ${SETS[*]} " == *" kafka.group_protocol=consumer "* ]] && epochs=1
	deadline=$((SECONDS + timeout))
	while ((SECONDS < deadline)); do
		if tail -n 200 "$DIR/samples.txt" | awk -v total="$total" -v want="$*" -v epochs="$epochs" '
			BEGIN { n = split(want, m, " "); for (i = 1; i <= n; i++) need[m[i]] = 1 }
			$2 in need && $3 != "down" { gen[$2] = $4; asg[$2] = $6; t = $1 }
			END {
				g = ""; sum = 0
				for (k in need) {
					if (!(k in gen)) exit 1
					if (!epochs && g != "" && gen[k] != g) exit 1
					if (epochs && asg[k] < int(total / n)) exit 1
					g = gen[k]; sum += asg[k]
				}
				if (sum != total) exit 1
				print t
			}'; then
			return 0
		fi
		sleep 0.2
	done
	return 1
}

cmd_run() {
	local parts=24 rate=16000 label="" out=""
	SETS=()
	while (($#)); do
		case $1 in
		--partitions) parts=$2 && shift ;;
		--rate) rate=$2 && shift ;;
		--set) SETS+=("$2") && shift ;;
		--label) label=$2 && shift ;;
		--out) out=$2 && shift ;;
		--quick)
			parts=12 rate=2000
			GROUPLAB_STEADY=${GROUPLAB_STEADY_SET:-5} GROUPLAB_SETTLE=${GROUPLAB_SETTLE_SET:-8}
			;;
		*) die "run: unknown option '$1'" ;;
		esac
		shift
	done
	setup "${label:-${SETS[*]:-default}}" "$out" "$parts" 3
	say "run '$LABEL': topic $TOPIC ($parts partitions, RF 3), $rate records/s; results in $DIR"

	sampler
	"$DIR/grouplab" produce -brokers "$(bootstrap)" -topic "$TOPIC" -partitions "$parts" -rate "$rate" >"$DIR/produce.log" 2>&1 &
	local producer=$!
	HELPERS+=("$producer")
	event start
	local n
	for n in 1 2 3; do start_member "$n"; done
	wait_assigned "$parts" 60 m1 m2 m3 >/dev/null || die "the three members did not share the $parts partitions within 60 s; logs in $DIR"
	event steady
	sleep "$GROUPLAB_STEADY"

	event join
	start_member 4
	sleep "$GROUPLAB_SETTLE"

	stop_member 2 restart
	sleep "$GROUPLAB_DOWN"
	event restart-started
	start_member 2
	sleep "$GROUPLAB_SETTLE"

	stop_member 4 leave
	sleep "$GROUPLAB_SETTLE"

	event drain
	kill -TERM "$producer"
	wait "$producer" || {
		tail_logs "$DIR/produce.log"
		die "the producer failed"
	}
	sleep 5 # the members read to the end
	event shutdown
	for n in 1 2 3; do
		kill -TERM "${PIDS[n]}"
	done
	for n in 1 2 3; do
		wait "${PIDS[n]}" || warn "member m$n exited with an error; see $DIR/m$n.log"
		PIDS[n]=""
	done
	# What a member had not yet read when it stopped is not committed: the
	# next member to start reads it, as after any deploy. Then the group
	# must have committed the end of every partition.
	LOGSTORE_MEMBER=m1 "$DIR/logstore" run -c "$DIR/m1.yaml" --until now >>"$DIR/m1.log" 2>&1 ||
		die "the last read (--until now) failed; see $DIR/m1.log"
	"$DIR/labclient" lag -brokers "$(bootstrap)" -topic "$TOPIC" -group "$TOPIC" -timeout 30s ||
		die "the group did not commit every record; logs in $DIR"
	event end
	sleep 1 # the sampler's last look at the output
	kill -TERM "${HELPERS[0]}" && wait "${HELPERS[0]}" || true

	local produced
	produced=$(sed -nE 's/^produced ([0-9]+) records.*/\1/p' "$DIR/produce.log")
	"$ARROW_PY" "$LOGSTORE_ROOT/scripts/verify_dataset.py" "$OUTPUT" >"$DIR/verify.json" ||
		die "pyarrow could not read $OUTPUT"
	report_run "$DIR" "$LABEL" "$produced" "$parts" "$rate" | tee "$DIR/table.md"
	jq -e .exactly_once "$DIR/result.json" >/dev/null || die "not every record exactly once; see $DIR and $OUTPUT"
	[[ -n ${GROUPLAB_KEEP:-} ]] || rm -rf "$OUTPUT"
}

# report_run DIR LABEL PRODUCED PARTITIONS RATE: the table, and
# DIR/result.json.
report_run() {
	"$ARROW_PY" - "$@" <<-'PY'
		import json, os, sys
		d, label, produced, parts, rate = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
		events = [(k, int(t)) for k, t in (l.split() for l in open(os.path.join(d, "events.txt")))]
		at = dict(events)
		series, files = {}, []
		for line in open(os.path.join(d, "samples.txt")):
		    f = line.split()
		    if f[1] == "file":
		        files.append(int(f[0]))
		    elif f[2] != "down" and f[2] != "-":
		        series.setdefault(f[1], []).append((int(f[0]), int(f[2]), f[3], int(f[4]) if f[4] != "-" else 0))

		def standstill(member, lo, hi):
		    """The longest time member's records counter stood still within
		    [lo, hi): from the sample that last saw it move to the one that
		    next did, clipped to the window."""
		    s = [x for x in series.get(member, []) if lo <= x[0] < hi]
		    if len(s) < 2:
		        return None
		    longest, since = 0, s[0][0]
		    for (t0, r0, _, _), (t1, r1, _, _) in zip(s, s[1:]):
		        if r1 != r0:
		            longest = max(longest, t1 - since)
		            since = t1
		    return max(longest, s[-1][0] - since) / 1e3

		def generations(member, lo, hi):
		    s = [x for x in series.get(member, []) if lo <= x[0] < hi]
		    gens = []
		    for x in s:
		        if not gens or gens[-1] != x[2]:
		            gens.append(x[2])
		    return gens, (s[-1][3] - s[0][3]) if s else 0

		windows = [
		    ("steady", at["steady"] + min(5000, (at["join"] - at["steady"]) // 2), at["join"], ["m1", "m2", "m3"], None),
		    ("join", at["join"], at["restart"], ["m1", "m2", "m3"], None),
		    ("restart", at["restart"], at["leave"], ["m1", "m3", "m4"], "restart"),
		    ("leave", at["leave"], at["drain"], ["m1", "m2", "m3"], "leave"),
		    ("shutdown", at["shutdown"], at["end"] + 1000, [], None),
		]
		rows = []
		print(f"\n### {label}: {parts} partitions, {rate:,} records/s, {produced:,} records\n")
		print("| event | longest standstill of each member that stayed, s | worst | generations seen | rebalances | member stopped in, s | files written |")
		print("|---|---|---:|---|---:|---:|---:|")
		for name, lo, hi, stayed, stopper in windows:
		    still = {m: standstill(m, lo, hi) for m in stayed}
		    gens = {m: generations(m, lo, hi) for m in stayed}
		    seen = sorted({g for gs, _ in gens.values() for g in gs}, key=lambda g: int(g) if g.isdigit() else -1)
		    rebal = max((r for _, r in gens.values()), default=0)
		    nfiles = sum(1 for t in files if lo <= t < hi)
		    stop = (at[stopper + "-stopped"] - at[stopper]) / 1e3 if stopper else None
		    worst = max((v for v in still.values() if v is not None), default=None)
		    rows.append({"event": name, "standstill_s": still, "worst_s": worst, "generations": seen,
		                 "rebalances": rebal, "stop_s": stop, "files": nfiles})
		    fmt = lambda v: "–" if v is None else f"{v:.1f}"
		    print(f"| {name} | {', '.join(f'{m} {fmt(v)}' for m, v in still.items()) or '–'} | {fmt(worst)} |"
		          f" {' → '.join(seen) or '–'} | {rebal} | {fmt(stop)} | {nfiles} |")
		verify = json.load(open(os.path.join(d, "verify.json")))
		want = {str(p): len(range(p, produced, parts)) for p in range(parts)}
		got = verify["partitions"]
		once = verify["rows"] == produced and verify["dead_letters"] == 0 and all(
		    got.get(p, {}).get("count") == c == got[p]["distinct"] and got[p]["min"] == 0 and got[p]["max"] == c - 1
		    for p, c in want.items() if c)
		print(f"\n{len(files)} files in all; pyarrow: {verify['rows']:,} rows of {produced:,} produced;"
		      f" every record exactly once: {'yes' if once else 'NO'}")
		with open(os.path.join(d, "result.json"), "w") as f:
		    json.dump({"label": label, "partitions": parts, "rate": rate, "produced": produced, "events": at,
		               "windows": rows, "files": len(files), "exactly_once": once, "verify_rows": verify["rows"]}, f, indent=1)
	PY
}

# cpu_ticks PID: user + system clock ticks the process has used.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

cmd_scale() {
	local parts=600 rf=3 idle=30 label="" out=""
	SETS=()
	while (($#)); do
		case $1 in
		--partitions) parts=$2 && shift ;;
		--rf) rf=$2 && shift ;;
		--idle) idle=$2 && shift ;;
		--set) SETS+=("$2") && shift ;;
		--label) label=$2 && shift ;;
		--out) out=$2 && shift ;;
		*) die "scale: unknown option '$1'" ;;
		esac
		shift
	done
	setup "${label:-${SETS[*]:-default}}" "$out" "$parts" "$rf"
	say "scale '$LABEL': topic $TOPIC ($parts partitions, RF $rf), no traffic; results in $DIR"
	sampler
	event start
	start_member 1
	wait_assigned "$parts" 120 m1 >/dev/null || die "m1 did not get the $parts partitions within 120 s; logs in $DIR"
	event owns-all
	# Not scraped while measured: a scrape of 600 partitions' metrics every
	# 100 ms costs more than the idle member.
	kill -TERM "${HELPERS[0]}" && wait "${HELPERS[0]}" || true
	sleep 5 # past the first fetches
	local hz t0 c0 c1 t1
	hz=$(getconf CLK_TCK)
	t0=$(now_ms) c0=$(cpu_ticks "${PIDS[1]}")
	sleep "$idle"
	t1=$(now_ms) c1=$(cpu_ticks "${PIDS[1]}")
	local idle_cpu
	idle_cpu=$(awk -v c=$((c1 - c0)) -v hz="$hz" -v ms=$((t1 - t0)) 'BEGIN { printf "%.4f", c / hz / (ms / 1000) }')

	local join_t done_t join_s leave_s
	sampler
	sleep 1
	join_t=$(now_ms)
	event join
	start_member 2
	done_t=$(wait_assigned "$parts" 120 m1 m2) || die "m1 and m2 did not share the $parts partitions within 120 s; logs in $DIR"
	echo "join-assigned $done_t" >>"$DIR/events.txt"
	join_s=$(awk -v ms=$((done_t - join_t)) 'BEGIN { printf "%.2f", ms / 1000 }')
	sleep 5
	join_t=$(now_ms)
	stop_member 2 leave
	done_t=$(wait_assigned "$parts" 120 m1) || die "m1 did not get the $parts partitions back within 120 s; logs in $DIR"
	echo "leave-assigned $done_t" >>"$DIR/events.txt"
	leave_s=$(awk -v ms=$((done_t - join_t)) 'BEGIN { printf "%.2f", ms / 1000 }')
	event end
	kill -TERM "${PIDS[1]}" && wait "${PIDS[1]}" || warn "m1 exited with an error; see $DIR/m1.log"
	PIDS[1]=""
	jq -n --arg run "$LABEL" --argjson parts "$parts" --argjson idle "$idle_cpu" --argjson join "$join_s" --argjson leave "$leave_s" \
		'{"label": $run, "partitions": $parts, "idle_cpu_s_per_s": $idle, "join_rebalance_s": $join, "leave_rebalance_s": $leave}' >"$DIR/result.json"
	{
		echo
		echo "| run | partitions | idle CPU, ms per s | rebalance on a join, s | rebalance on a leave, s |"
		echo "|---|---:|---:|---:|---:|"
		awk -v l="$LABEL" -v p="$parts" -v c="$idle_cpu" -v j="$join_s" -v v="$leave_s" \
			'BEGIN { printf "| %s | %d | %.1f | %s | %s |\n", l, p, c * 1000, j, v }'
	} | tee "$DIR/table.md"
}

main() {
	local cmd=${1:-}
	(($# > 0)) && shift
	case $cmd in
	run) cmd_run "$@" ;;
	scale) cmd_scale "$@" ;;
	*) usage ;;
	esac
}

main "$@"
