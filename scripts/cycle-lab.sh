#!/usr/bin/env bash
# The cycle lab: what a partition reading on while its batch waits for the
# member's commit cycle buys a catch-up. Two logstore binaries (A and B,
# e.g. main and main built with the overlap switched off, or two commits)
# read the same backlog, in turn (A B A B ...), each run a fresh group:
#
#   scripts/cycle-lab.sh [--mode table|eos] [--records 600000]
#                        [--partitions 12] [--runs 4] [--max-rows 10000]
#                        [--commit-interval 1s] [--out DIR] BIN_A BIN_B
#
#   table  sinks.iceberg alone (SQLite catalog, local warehouse), at least
#          once, sinks.commit_interval --commit-interval: the partition
#          reads on once the batch's data files are written
#   eos    sinks.files and sinks.kafka delivery exactly_once (a new output
#          topic per run: the positions topic would skip what an earlier
#          run wrote)
#
# The backlog is --records of the bench's logs (pipeline.LogGen) in a topic
# of --partitions (RF 3); batch.max_rows --max-rows cuts each partition
# into several batches, so each waits for several cycles. Per run: wall
# seconds, CPU seconds and peak RSS of the process (bench-lib's measure),
# and the rows the job's summary says it wrote. DIR/runs.jsonl has every
# run, DIR/table.md the medians and the A/B ratios paired run by run
# (default $LOGSTORE_STATE/cycle-lab/<time>). Minutes of load on the shared
# cluster, not in CI; figures in BENCHMARKS.md.
set -euo pipefail

LOGSTORE_TOOL=cycle-lab
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/bench-lib.sh
source "$LOGSTORE_ROOT/scripts/bench-lib.sh"

MODE=table RECORDS=600000 PARTS=12 RUNS=4 MAX_ROWS=10000 INTERVAL=1s
DIR=$LOGSTORE_STATE/cycle-lab/$(date -u +%Y%m%dT%H%M%SZ)
while (($# > 2)); do
	case $1 in
	--mode) MODE=$2 ;;
	--records) RECORDS=$2 ;;
	--partitions) PARTS=$2 ;;
	--runs) RUNS=$2 ;;
	--max-rows) MAX_ROWS=$2 ;;
	--commit-interval) INTERVAL=$2 ;;
	--out) DIR=$2 ;;
	*) usage ;;
	esac
	shift 2
done
(($# == 2)) || usage
A=$(realpath "$1") B=$(realpath "$2")
[[ $MODE == table || $MODE == eos ]] || die "--mode $MODE: choose table or eos"

kafka() { bash "$LOGSTORE_ROOT/scripts/kafka-cluster.sh" "$@"; }
topics() { kafka tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$(kafka bootstrap)" "$@"; }
kafka status >/dev/null 2>&1 || die "the Kafka cluster is not up: scripts/kafka-cluster.sh start"
[[ -x $PY ]] || die "no $PY: run scripts/bench once (it makes the bench venv)"
BOOTSTRAP=$(kafka bootstrap)
TOPIC="cyclelab-$(date -u +%H%M%S)-$$"
mkdir -p "$DIR"
say "results in $DIR"

CREATED=("$TOPIC")
cleanup() {
	local t
	for t in "${CREATED[@]}"; do topics --delete --topic "$t" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

say "generating $RECORDS logs into $TOPIC ($PARTS partitions, RF 3)"
(cd "$LOGSTORE_ROOT" && LOGSTORE_BENCH_CAPTURE="$DIR/capture.jsonl" LOGSTORE_BENCH_RECORDS=$RECORDS \
	LOGSTORE_BENCH_PARTITIONS=$PARTS go test -count=1 -tags integration -run '^TestBenchCapture$' ./cmd/logstore/ >/dev/null) ||
	die "generating the logs failed"
topics --create --topic "$TOPIC" --partitions "$PARTS" --replication-factor 3 >/dev/null
job_config "$DIR/replay.yaml" "$BOOTSTRAP" "$TOPIC" "$TOPIC-replay" "$DIR/unused" az-a
"$A" replay -c "$DIR/replay.yaml" --input "$DIR/capture.jsonl" --topic "$TOPIC" >"$DIR/replay.log" 2>&1 ||
	{
		tail_logs "$DIR/replay.log"
		die "replay failed"
	}
rm -f "$DIR/capture.jsonl"

# config FILE RUN: the job of one run, its group and outputs its own.
config() {
	local f=$1 run=$2
	job_config "$f" "$BOOTSTRAP" "$TOPIC" "$TOPIC-$run" "$DIR/$run/out" az-a
	sed -i "s/^  max_rows: .*/  max_rows: $MAX_ROWS/; s/on_error: dead_letter/on_error: skip/; s/^  files: true$/  files: false/" "$f"
	case $MODE in
	table)
		"$PY" - "$f" "$DIR/$run" "$INTERVAL" <<-'PY'
			import re, sys
			path, d, interval = sys.argv[1:4]
			s = open(path).read()
			s = re.sub(r"sinks:\n(  .*\n)+", f"sinks:\n  commit_interval: {interval}\n  iceberg:\n    table: logs.raw\n"
			           f"    catalog: {{uri: {d}/catalog.db, warehouse: \"file://{d}/warehouse\"}}\n    file: {{fsync: false}}\n", s)
			open(path, "w").write(s)
		PY
		;;
	eos)
		local out="$TOPIC-$run-out"
		topics --create --topic "$out" --partitions "$PARTS" --replication-factor 3 >/dev/null
		CREATED+=("$out" "$out.logstore-positions")
		sed -i "s#^dead_letter:#  commit_interval: $INTERVAL\n  kafka: {topic: $out, delivery: exactly_once}\ndead_letter:#" "$f"
		;;
	esac
}

: >"$DIR/runs.jsonl"
for ((i = 1; i <= RUNS; i++)); do
	for side in A B; do
		run="$side$i"
		bin=$A
		[[ $side == B ]] && bin=$B
		mkdir -p "$DIR/$run"
		config "$DIR/$run/job.yaml" "$run"
		say "run $run: $(basename "$bin") run --until now ($MODE)"
		measure "$DIR/$run/measure.json" "$DIR/$run/run.log" "$bin" run -c "$DIR/$run/job.yaml" --until now ||
			{
				tail_logs "$DIR/$run/run.log"
				die "run $run failed"
			}
		rows=$(awk '/rows written/ {print $3}' "$DIR/$run/run.log")
		"$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); r.update(run=sys.argv[2], side=sys.argv[3], rows=int(sys.argv[4])); print(json.dumps(r))' \
			"$DIR/$run/measure.json" "$run" "$side" "${rows:-0}" >>"$DIR/runs.jsonl"
		rm -rf "$DIR/$run/out" "$DIR/$run/warehouse"
	done
done

"$PY" - "$DIR/runs.jsonl" "$MODE" "$RECORDS" "$PARTS" "$MAX_ROWS" "$INTERVAL" <<-'PY' | tee "$DIR/table.md"
	import json, statistics as st, sys
	runs = [json.loads(l) for l in open(sys.argv[1])]
	mode, n, parts, rows, interval = sys.argv[2:7]
	a = [r for r in runs if r["side"] == "A"]
	b = [r for r in runs if r["side"] == "B"]
	bad = [r["run"] for r in runs if r["rows"] != int(n)]
	print(f"mode {mode}, {n} records, {parts} partitions, max_rows {rows}, commit_interval {interval}, {len(a)} runs each")
	print("| | wall s | CPU s | peak RSS MiB |\n|---|---:|---:|---:|")
	for name, rs in (("A", a), ("B", b)):
	    print(f"| {name} | {st.median(r['wall_s'] for r in rs):.2f} | {st.median(r['cpu_s'] for r in rs):.2f} | {st.median(r['peak_rss'] for r in rs) / 2**20:.0f} |")
	for key in ("wall_s", "cpu_s"):
	    ratios = sorted(x[key] / y[key] for x, y in zip(a, b))
	    print(f"A/B {key[:-2]}: median {st.median(ratios):.2f} (pairs {', '.join(f'{r:.2f}' for r in ratios)})")
	print("every run wrote every record" if not bad else f"runs that did not write {n} rows: {bad}")
PY
