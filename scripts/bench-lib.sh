# shellcheck shell=bash
# What the benchmarks share (scripts/bench, scripts/zonelab.sh --compare):
# the logstore job, the Spark install, measuring a process tree and reading
# an output back with pyarrow. Source it after lib.sh; don't run it.
#
# Defines VENV and PY (the bench venv: pyspark, pyarrow, psutil) and
# BENCH_PYSPARK_VERSION; setup_spark sets SPARK_JARS, setup_flink FLINK_CP.

BENCH_PYSPARK_VERSION="${BENCH_PYSPARK_VERSION:-4.2.0}"
VENV="$LOGSTORE_CACHE/bench-venv"
PY="$VENV/bin/python"

# setup_spark installs pyspark, pyarrow, psutil and matplotlib into VENV and resolves the
# spark-sql-kafka jars with Maven, once each.
setup_spark() {
	need java mvn python3
	if ! "$PY" -c "import pyspark, pyarrow, psutil, matplotlib; assert pyspark.__version__ == '$BENCH_PYSPARK_VERSION'" 2>/dev/null; then
		say "installing pyspark $BENCH_PYSPARK_VERSION, pyarrow, psutil, matplotlib into $VENV (once)"
		[[ -x $PY ]] || python3 -m venv "$VENV"
		"$VENV/bin/pip" install -q "pyspark==$BENCH_PYSPARK_VERSION" pyarrow psutil matplotlib ||
			die "pip install into $VENV failed"
	fi
	local scala
	scala=$("$PY" - <<-'PY'
		import glob, os, re, pyspark
		jar = glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "spark-core_*.jar"))[0]
		print(re.search(r"spark-core_(\d+\.\d+)-", jar).group(1))
	PY
	)
	# The Kafka source is not in pyspark's jars. Maven resolves it (and what
	# it needs at run time) into the cache; we pass only the jars pyspark
	# lacks, so its own Scala, Hadoop and codec jars are the ones used.
	local dir="$LOGSTORE_CACHE/spark-sql-kafka-$scala-$BENCH_PYSPARK_VERSION"
	if ! compgen -G "$dir/jars/spark-sql-kafka-0-10_*.jar" >/dev/null; then
		say "resolving org.apache.spark:spark-sql-kafka-0-10_$scala:$BENCH_PYSPARK_VERSION with Maven (once)"
		mkdir -p "$dir"
		cat >"$dir/pom.xml" <<-EOF
			<project xmlns="http://maven.apache.org/POM/4.0.0">
			  <modelVersion>4.0.0</modelVersion>
			  <groupId>io.logstore.bench</groupId>
			  <artifactId>spark-kafka-jars</artifactId>
			  <version>1</version>
			  <packaging>pom</packaging>
			  <dependencies>
			    <dependency>
			      <groupId>org.apache.spark</groupId>
			      <artifactId>spark-sql-kafka-0-10_$scala</artifactId>
			      <version>$BENCH_PYSPARK_VERSION</version>
			    </dependency>
			  </dependencies>
			</project>
		EOF
		mvn -q -B -f "$dir/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
			-DoutputDirectory="$dir/jars" >"$dir/mvn.log" 2>&1 ||
			{
				tail_logs "$dir/mvn.log"
				die "Maven could not resolve spark-sql-kafka $BENCH_PYSPARK_VERSION"
			}
	fi
	SPARK_JARS=$(
		shopt -s nullglob
		IFS=,
		jars=("$dir"/jars/{spark-sql-kafka-0-10,spark-token-provider-kafka-0-10}_*.jar "$dir"/jars/{kafka-clients,commons-pool2}-*.jar)
		echo "${jars[*]}"
	)
	export PATH="$VENV/bin:$PATH" PYSPARK_PYTHON="$PY" PYSPARK_DRIVER_PYTHON="$PY"
}

# setup_flink builds scripts/bench_flink (the Apache Flink baseline: one
# Main.java, Flink 2.2 from Maven) into $LOGSTORE_CACHE once per version of
# its sources, and sets FLINK_CP, the classpath `java bench.Main` runs with.
# The folder is named by a hash of pom.xml and Main.java, so an edit builds
# anew and an unchanged checkout reuses the jars.
setup_flink() {
	need java mvn sha256sum
	local src="$LOGSTORE_ROOT/scripts/bench_flink" hash dir
	hash=$(cat "$src/pom.xml" "$src/src/main/java/bench/Main.java" | sha256sum | cut -c1-12)
	dir="$LOGSTORE_CACHE/bench-flink-$hash"
	if [[ ! -s $dir/bench-flink.jar ]]; then
		say "building the Flink baseline (scripts/bench_flink, Flink 2.2) with Maven into $dir (once)"
		rm -rf "$dir"
		mkdir -p "$dir"
		cp -r "$src/pom.xml" "$src/src" "$dir/"
		mvn -q -B -f "$dir/pom.xml" package dependency:copy-dependencies -DincludeScope=runtime \
			-DoutputDirectory="$dir/lib" >"$dir/mvn.log" 2>&1 ||
			{
				tail_logs "$dir/mvn.log"
				die "Maven could not build the Flink baseline; see $dir/mvn.log"
			}
		# The jar last: its presence says the folder is complete.
		cp "$dir/target/bench-flink.jar" "$dir/bench-flink.jar"
	fi
	FLINK_CP="$dir/bench-flink.jar:$dir/lib/*"
}

# measure OUT LOG CMD...: runs CMD with its output in LOG and writes
# {wall_s, cpu_s, peak_rss, max_single_rss, rc, start_unix} to OUT. Peak RSS is the
# largest sum over the process tree, sampled every 100 ms; CPU is user+sys
# of every process in the tree (the JVM's children too).
measure() {
	local out=$1 log=$2
	shift 2
	"$PY" - "$out" "$log" "$@" <<-'PY'
		import json, resource, subprocess, sys, time
		import psutil
		out, log, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
		peak = 0
		start, start_unix = time.monotonic(), time.time()
		with open(log, "wb") as f:
		    p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
		    root = psutil.Process(p.pid)
		    while p.poll() is None:
		        rss = 0
		        try:
		            tree = [root] + root.children(recursive=True)
		        except psutil.Error:
		            tree = []
		        for q in tree:
		            try:
		                rss += q.memory_info().rss
		            except psutil.Error:
		                pass
		        peak = max(peak, rss)
		        time.sleep(0.1)
		wall = time.monotonic() - start
		ru = resource.getrusage(resource.RUSAGE_CHILDREN)
		rec = {"wall_s": round(wall, 3), "cpu_s": round(ru.ru_utime + ru.ru_stime, 3),
		       "peak_rss": peak, "max_single_rss": ru.ru_maxrss * 1024, "rc": p.returncode,
		       "start_unix": start_unix}
		with open(out, "w") as o:
		    json.dump(rec, o)
		sys.exit(p.returncode)
	PY
}

# demo_columns prints cmd/logstore/demo.yaml's column list: the benchmarks
# decode the same columns as the demo, kept in one place.
demo_columns() {
	sed -n '/^  columns:$/,/^  [a-z_]*:/{/^    - /p}' "${BASH_SOURCE[0]%/*}/../cmd/logstore/demo.yaml"
}

# job_config FILE BROKERS TOPIC GROUP OUTPUT RACK [FOLLOWER_FETCHING]
# [MEMORY_BUDGET] [RECORDS_PER_SECOND] [BATCH]: the benchmarks' logstore job,
# cmd/logstore/demo.yaml's columns without its `where` filter, from TOPIC
# into zstd Parquet under OUTPUT. RACK may be '${LOGSTORE_RACK}', which
# logstore expands when it loads the file. BATCH "defaults" keeps the batch
# settings at their defaults (files cut at 128 MiB or 5 minutes, as
# scripts/bench measures); otherwise batches of 50,000 rows or 10 s, so
# files appear while a run streams.
job_config() {
	local batch="  max_rows: 50000
  max_age: 10s"
	[[ ${10:-} == defaults ]] && batch="  max_age: 5m"
	cat >"$1" <<-EOF
		kafka:
		  brokers: [$2]
		  topics: [$3]
		  group: $4
		  start_offset: earliest
		  max_records_per_second: ${9:-0}
		rack:
		  static: $6
		  providers: [static]
		  follower_fetching: ${7:-auto}
		schema:
		  format: json
		  columns:
		$(demo_columns)
		batch:
		${batch}
		  ${8:+memory_budget: $8}
		sinks:
		  files:
		    url: file://$5
		    partition_by:
		      - {name: dt, column: ts, format: "2006-01-02"}
		      - {name: hour, column: ts, format: "15"}
		dead_letter:
		  on_error: dead_letter
		  files: true
		log:
		  level: warn
		  format: text
	EOF
}

# verify DIR OUT: pyarrow reads the Parquet under DIR and writes to OUT
# what it holds: rows, distinct (partition, offset), null counts
# and sums that two outputs of the same rows share, file count and bytes.
verify() {
	"$PY" - "$1" "$2" <<-'PY'
		import glob, json, os, sys
		import pyarrow.compute as pc
		import pyarrow.dataset as ds
		root, out = sys.argv[1:3]
		files = sorted(glob.glob(os.path.join(root, "**", "*.parquet"), recursive=True))
		files = [f for f in files if "/_" not in f[len(root):]]  # _errors/, _spark_metadata/
		cols = ["ts", "status", "latency_ms", "labels", "is_error", "kafka_partition", "kafka_offset", "trace_id"]
		if not files:  # nothing written: say so in the table, do not crash on the empty schema
		    with open(out, "w") as o:
		        json.dump({"rows": 0, "distinct": 0, "offset_sum": None, "status_sum": None, "latency_centi_sum": None,
		                   "errors": None, "ts_min": None, "ts_max": None, "nulls": {}, "types": {}, "files": 0, "bytes": 0}, o)
		    sys.exit(0)
		t = ds.dataset(files, format="parquet").to_table(columns=cols)
		pairs = pc.add(pc.multiply(pc.cast(t["kafka_partition"], "int64"), 1 << 40), t["kafka_offset"])
		ts = pc.cast(t["ts"], "int64")
		rec = {
		    "rows": t.num_rows, "distinct": len(pc.unique(pairs)),
		    "offset_sum": pc.sum(t["kafka_offset"]).as_py(), "status_sum": pc.sum(t["status"]).as_py(),
		    "latency_centi_sum": pc.sum(pc.cast(pc.round(pc.multiply(t["latency_ms"], 100)), "int64")).as_py(),
		    "errors": pc.sum(pc.cast(t["is_error"], "int64")).as_py(),
		    "ts_min": pc.min(ts).as_py(), "ts_max": pc.max(ts).as_py(),
		    "nulls": {c: t[c].null_count for c in cols},
		    "types": {c: str(t.schema.field(c).type) for c in cols},
		    "files": len(files), "bytes": sum(os.path.getsize(f) for f in files),
		}
		with open(out, "w") as o:
		    json.dump(rec, o)
	PY
}

# topic_ranges BOOTSTRAP TOPIC prints PARTITION:START:END for each partition
# of the topic: the offsets a reader gets records from and up to.
topic_ranges() {
	local tool=(bash "$LOGSTORE_ROOT/scripts/kafka-cluster.sh" tool org.apache.kafka.tools.GetOffsetShell --bootstrap-server "$1" --topic "$2")
	join -t: -j1 <("${tool[@]}" --time -2 2>/dev/null | awk -F: '{print $(NF - 1) ":" $NF}' | sort -t: -k1,1) \
		<("${tool[@]}" --time -1 2>/dev/null | awk -F: '{print $(NF - 1) ":" $NF}' | sort -t: -k1,1)
}

# topic_holds BOOTSTRAP TOPIC prints how many records a reader of the topic
# gets: each partition's end offset less its start offset (not the end
# offsets alone: retention or deleted records move a partition's start).
topic_holds() { topic_ranges "$1" "$2" | awk -F: '{n += $3 - $2} END {print n + 0}'; }

# partitions_filled BOOTSTRAP TOPIC prints how many of the topic's
# partitions hold a readable record.
partitions_filled() { topic_ranges "$1" "$2" | awk -F: '$3 > $2 {n++} END {print n + 0}'; }
