#!/usr/bin/env bash
# The table bench: what the Iceberg sink leaves in its table under steady
# load (snapshots per hour, data files per partition) beside what the files
# sink leaves in its folders, on the three-rack cluster and the S3 server.
#
#   scripts/tablebench.sh [--seconds 180] [--rate 2000] [--partitions 12]
#                         [--max-age 15s] [--out DIR]
#
# One topic (RF 3) gets generated logs at --rate records/s from one
# producer for --seconds; three jobs read it at once, each a group of one
# member (az-a) with the bench's columns and batch.max_age --max-age (rows
# and bytes never cut first at these rates):
#
#   files      sinks.files, dt=/hour= folders (as scripts/bench)
#   table-0s   sinks.iceberg, hour(ts), commit_interval 0s (the default)
#   table-10s  sinks.iceberg, hour(ts), commit_interval 10s
#
# The tables use the SQL catalog on a SQLite file in DIR, their warehouse
# on the S3 server. Once the producer stops, the jobs read to the end
# (--until now) and stop; then pyiceberg reads each table's snapshots and
# data files, and the files sink's Parquet files are counted per Kafka
# partition (the partition is in every file's name). Snapshots per hour
# are the snapshots that added files, over the seconds the producer ran,
# times 3,600.
#
# Results: DIR/table.md and DIR/result.json (default
# $LOGSTORE_STATE/tablebench/<time>); the jobs' logs and configs are kept
# there, and the catalog, so scripts/spark_read_iceberg.py can read a table
# afterwards. Uses the shared cluster: run it under
# `flock /tmp/logstore-it.lock` when other tests may restart brokers.
set -euo pipefail

LOGSTORE_TOOL=tablebench
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/bench-lib.sh
source "$LOGSTORE_ROOT/scripts/bench-lib.sh"

SECONDS_RUN=180 RATE=2000 PARTS=12 MAX_AGE=15s
DIR=$LOGSTORE_STATE/tablebench/$(date -u +%Y%m%dT%H%M%SZ)
while (($#)); do
	case $1 in
	--seconds) SECONDS_RUN=$2 ;;
	--rate) RATE=$2 ;;
	--partitions) PARTS=$2 ;;
	--max-age) MAX_AGE=$2 ;;
	--out) DIR=$2 ;;
	*) usage ;;
	esac
	shift 2
done
ARROW_PY="$LOGSTORE_CACHE/venv/bin/python"
JOBS=(files table-0s table-10s)

kafka() { bash "$LOGSTORE_ROOT/scripts/kafka-cluster.sh" "$@"; }
topics() { kafka tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$(kafka bootstrap)" "$@"; }

kafka status >/dev/null 2>&1 || die "the Kafka cluster is not up: scripts/kafka-cluster.sh start"
bash "$LOGSTORE_ROOT/scripts/s3-server.sh" status >/dev/null 2>&1 || die "the S3 server is not up: scripts/s3-server.sh start"
"$ARROW_PY" -c 'import pyiceberg' 2>/dev/null || die "no pyiceberg in $ARROW_PY: scripts/setup.sh"
eval "$(bash "$LOGSTORE_ROOT/scripts/s3-server.sh" env)"
TOPIC="tablebench-$(date -u +%H%M%S)-$$"
BUCKET=tablebench
# The S3 server's posix backend: a bucket is a folder, an object a file.
mkdir -p "$DIR" "$LOGSTORE_STATE/s3/data/$BUCKET"
say "results in $DIR"
(cd "$LOGSTORE_ROOT" && go build -o "$DIR/logstore" ./cmd/logstore && go build -o "$DIR/grouplab" ./scripts/grouplab) ||
	die "build failed"
topics --create --topic "$TOPIC" --partitions "$PARTS" --replication-factor 3 >/dev/null

PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	topics --delete --topic "$TOPIC" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# job_config NAME: the job NAME of the header, its group named after it.
job_config() {
	local name=$1 sink
	case $name in
	files)
		sink="  files:
    url: s3://$BUCKET/$TOPIC/files
    partition_by:
      - {name: dt, column: ts, format: \"2006-01-02\"}
      - {name: hour, column: ts, format: \"15\"}
    s3: {endpoint: $AWS_ENDPOINT_URL_S3}"
		;;
	table-*)
		sink="  iceberg:
    table: bench.${TOPIC//-/_}_${name//-/_}
    catalog: {type: sql, uri: $DIR/catalog.db, warehouse: \"s3://$BUCKET/$TOPIC/warehouse\"}
    partition_by: [{column: ts, transform: hour}]
    commit_interval: ${name#table-}
    s3: {endpoint: $AWS_ENDPOINT_URL_S3}"
		;;
	esac
	cat >"$DIR/$name.yaml" <<-EOF
		kafka:
		  brokers: [$(kafka bootstrap)]
		  topics: [$TOPIC]
		  group: $TOPIC-$name
		  start_offset: earliest
		rack:
		  static: az-a
		  providers: [static]
		  follower_fetching: auto
		schema:
		  format: json
		  columns:
		$(demo_columns)
		batch:
		  max_age: $MAX_AGE
		sinks:
		$sink
		dead_letter:
		  on_error: skip
		log:
		  level: info
		  format: text
	EOF
}

for name in "${JOBS[@]}"; do
	job_config "$name"
	"$DIR/logstore" run -c "$DIR/$name.yaml" >"$DIR/$name.log" 2>&1 &
	PIDS+=($!)
done
t0=$(now_ms)
"$DIR/grouplab" produce -brokers "$(kafka bootstrap)" -topic "$TOPIC" -partitions "$PARTS" -rate "$RATE" >"$DIR/produce.log" 2>&1 &
producer=$!
sleep "$SECONDS_RUN"
kill -TERM "$producer"
wait "$producer" || die "the producer failed: $(tail -5 "$DIR/produce.log")"
ran_ms=$(($(now_ms) - t0))
produced=$(sed -nE 's/^produced ([0-9]+) records.*/\1/p' "$DIR/produce.log")
say "produced $produced records in $((ran_ms / 1000)) s; the jobs read to the end"
# The running jobs stop at SIGTERM with their open batches unwritten; a
# last run of each with --until now writes them, as a deploy's next member would.
for p in "${PIDS[@]}"; do kill -TERM "$p"; done
for p in "${PIDS[@]}"; do wait "$p" || die "a job failed to stop cleanly (logs in $DIR)"; done
PIDS=()
for name in "${JOBS[@]}"; do
	"$DIR/logstore" run -c "$DIR/$name.yaml" --until now >>"$DIR/$name.log" 2>&1 || die "$name: the last run failed (see $DIR/$name.log)"
done

"$ARROW_PY" - "$DIR" "$TOPIC" "$PARTS" "$RATE" "$produced" "$ran_ms" "$MAX_AGE" "$LOGSTORE_STATE/s3/data/$BUCKET/$TOPIC/files" <<'EOF' | tee "$DIR/table.md"
import collections, json, os, sys
from pyiceberg.catalog.sql import SqlCatalog
d, topic, parts, rate, produced, ran_ms, max_age, files_dir = sys.argv[1:]
parts, rate, produced, ran_s = int(parts), int(rate), int(produced), int(ran_ms) / 1000

def per_partition(names):
    # <topic>-<partition>-<first>-<last>.parquet
    c = collections.Counter(int(os.path.basename(n)[:-len(".parquet")].rsplit("-", 3)[1]) for n in names)
    return [c.get(p, 0) for p in range(parts)]

files = [os.path.join(r, f) for r, _, fs in os.walk(files_dir) for f in fs if f.endswith(".parquet") and "/_errors" not in r]
rows = {"files": {"snapshots": None, "files": per_partition(files), "rows": None}}
cat = SqlCatalog("logstore", uri="sqlite:///" + os.path.join(d, "catalog.db"), **{
    "s3.endpoint": os.environ["AWS_ENDPOINT_URL_S3"], "s3.access-key-id": os.environ["AWS_ACCESS_KEY_ID"],
    "s3.secret-access-key": os.environ["AWS_SECRET_ACCESS_KEY"], "s3.region": "us-east-1", "s3.force-virtual-addressing": "false"})
for name in ("table-0s", "table-10s"):
    t = cat.load_table("bench." + topic.replace("-", "_") + "_" + name.replace("-", "_"))
    snaps = [s for s in t.metadata.snapshots if int(s.summary.get("added-data-files", "0")) > 0]
    tasks = list(t.scan().plan_files())
    rows[name] = {"snapshots": len(snaps), "files": per_partition(t.file.file_path for t in tasks),
                  "rows": sum(t.file.record_count for t in tasks)}
print(f"\n### {parts} partitions, {rate:,} records/s for {ran_s:.0f} s ({produced:,} records), batch.max_age {max_age}\n")
print("| sink | snapshots | snapshots per hour | data files per partition (mean, min-max) | rows in the table |")
print("|---|---:|---:|---:|---:|")
for name, r in rows.items():
    f = r["files"]
    snap = "-" if r["snapshots"] is None else f"{r['snapshots']:,}"
    per_h = "-" if r["snapshots"] is None else f"{r['snapshots'] / ran_s * 3600:,.0f}"
    held = "-" if r["rows"] is None else f"{r['rows']:,}"
    print(f"| {name} | {snap} | {per_h} | {sum(f) / parts:.1f} ({min(f)}-{max(f)}) | {held} |")
json.dump({"partitions": parts, "rate": rate, "produced": produced, "seconds": ran_s, "max_age": max_age, "jobs": rows},
          open(os.path.join(d, "result.json"), "w"))
EOF
