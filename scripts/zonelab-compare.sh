# shellcheck shell=bash
# `scripts/zonelab.sh --compare`: the same job, on the same topic in the zone
# lab, done by Spark Structured Streaming (a standalone cluster: master and
# driver in the root namespace, one worker with one executor in each zone),
# by logstore (one member per zone) and by kafka-go's own Reader (one member
# per zone, RackAffinityGroupBalancer), with the kernel's counters zeroed
# before each run. Sourced by zonelab.sh; don't run it.
#
# Runs: spark-no-rack (no kafka.client.rack: leaders), spark-az-a
# (kafka.client.rack=az-a for every executor, the only setting Spark has),
# spark-minpart (the same plus minPartitions at 3x the partitions: split
# offset ranges, scheduled wherever a core is free instead of by
# hash(TopicPartition) % executors), logstore-members, kafka-go;
# ZONELAB_SYSTEMS selects some of them (logstore for logstore-members). Per run: bytes by the kernel per zone, records, wall
# time, CPU seconds and peak RSS of every process in the zones except the
# brokers (Spark's worker daemons and executors, logstore, kafka-go) plus the
# driver's process tree (Spark), and the output read back by pyarrow.

SPARK_MASTER_ADDR=198.18.0.1
SPARK_MASTER_URL="spark://$SPARK_MASTER_ADDR:7077"

spark_home() { "$PY" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))'; }

spark_up() {
	local home=$1 dir=$ZL_STATE/spark i zone
	mkdir -p "$dir"
	spawn "$dir/master.pid" "$dir/master.log" "$home/bin/spark-class" org.apache.spark.deploy.master.Master \
		--host "$SPARK_MASTER_ADDR" --port 7077 --webui-port 18480
	wait_for_port 7077 120 "$dir/master.pid" "$SPARK_MASTER_ADDR" || die "the Spark master did not start; see $dir/master.log"
	for i in 1 2 3; do
		zone=${ZONES[i - 1]}
		mkdir -p "$dir/work-$zone"
		spawn "$dir/worker-$zone.pid" "$dir/worker-$zone.log" \
			ip netns exec "$(ns_of "$zone")" env SPARK_LOCAL_IP="$(zone_addr "$i")" \
			"$home/bin/spark-class" org.apache.spark.deploy.worker.Worker \
			--host "$(zone_addr "$i")" --cores 1 --memory 1500m --work-dir "$dir/work-$zone" \
			--webui-port 18481 "$SPARK_MASTER_URL"
	done
	local deadline=$((SECONDS + 180))
	until (($(grep -c 'Registering worker' "$dir/master.log" 2>/dev/null || true) >= 3)); do
		((SECONDS < deadline)) || die "Spark workers did not register; see $dir/*.log"
		sleep 1
	done
	say "Spark standalone: master $SPARK_MASTER_URL, a worker in each zone"
}

spark_down() {
	local f
	for f in "$ZL_STATE"/spark/*.pid; do
		[[ -e $f ]] && stop_pidfile "$f" 30
	done
	return 0
}

# usage_sampler OUT: until SIGTERM, samples every process in the zones but
# the brokers; writes per zone the CPU seconds they used and their peak
# summed RSS.
usage_sampler() {
	exec "$PY" - "$1" "$(date +%s.%N)" "${ZONES[@]}" <<-'PY'
		import json, os, signal, sys, time
		import psutil
		out, START, zones = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
		ino = {os.stat(f"/run/netns/zl-{z}").st_ino: z for z in zones}
		first, last, peak = {}, {}, {z: 0 for z in zones}
		stop = []
		signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
		while not stop:
		    rss = {z: 0 for z in zones}
		    for p in psutil.process_iter():
		        try:
		            z = ino.get(os.stat(f"/proc/{p.pid}/ns/net").st_ino)
		            if z is None or "kafka.Kafka" in " ".join(p.cmdline()):
		                continue
		            c = p.cpu_times()
		            key = (z, p.pid, p.create_time())
		            first.setdefault(key, c.user + c.system if p.create_time() < START else 0.0)
		            last[key] = c.user + c.system
		            rss[z] += p.memory_info().rss
		        except (psutil.Error, OSError):
		            pass
		    for z in zones:
		        peak[z] = max(peak[z], rss[z])
		    time.sleep(0.2)
		cpu = {z: 0.0 for z in zones}
		for key, v in last.items():
		    cpu[key[0]] += v - first[key]
		json.dump({z: {"cpu_s": round(cpu[z], 2), "peak_rss": peak[z]} for z in zones}, open(out, "w"))
	PY
}

# compare_run NAME DIR SCRIPT: runs SCRIPT (bash) measured, with the kernel's
# counters zeroed before and read after, and the zones' usage sampled.
compare_run() {
	local name=$1 d=$2/$1 script=$3 sampler
	mkdir -p "$d"
	counters_zero
	usage_sampler "$d/usage.json" &
	sampler=$!
	say "compare: $name"
	measure "$d/measure.json" "$d/run.log" bash "$script" || {
		kill -TERM "$sampler"
		tail_logs "$d/run.log"
		die "$name failed"
	}
	kill -TERM "$sampler"
	wait "$sampler" || true
	counters_read >"$d/kernel.txt"
}

# compare_wanted SYSTEM: whether ZONELAB_SYSTEMS (comma-separated; empty:
# all) names SYSTEM: spark-no-rack, spark-az-a, spark-minpart, logstore,
# kafka-go.
compare_wanted() {
	[[ -z ${ZONELAB_SYSTEMS:-} || ,$ZONELAB_SYSTEMS, == *",$1,"* ]]
}

cmd_compare() {
	local records=240000 per_zone=4
	while (($#)); do
		case $1 in
		--records) records=$2 && shift ;;
		--per-zone) per_zone=$2 && shift ;;
		*) die "--compare: unknown option '$1'" ;;
		esac
		shift
	done
	kafka status >/dev/null 2>&1 || die "the lab is not up: $0 up"
	setup_spark
	local home dir=$ZL_STATE/compare/$(date -u +%Y%m%dT%H%M%SZ) parts=$((per_zone * 3))
	local topic="zonelab-compare-$(date -u +%H%M%S)" b
	home=$(spark_home)
	b=$(bootstrap)
	mkdir -p "$dir"
	say "compare: $records records, $parts partitions, RF 3; results in $dir"
	(cd "$LOGSTORE_ROOT" && go build -o "$dir/logstore" ./cmd/logstore && go build -o "$dir/labclient" ./scripts/labclient)
	kafka_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$b" \
		--create --topic "$topic" --partitions "$parts" --replication-factor 3 >/dev/null
	capture "$parts" "$records" "$dir"
	produce "$topic" "$dir"
	rm -f "$dir/capture.jsonl"
	leaders "$topic" >"$dir/leaders.txt"

	# NAME RACK MIN_PARTITIONS per Spark run; spark-minpart is the fairest
	# try: Spark's one rack plus minPartitions at 3x the partitions, so the
	# source splits offset ranges into more tasks than executors.
	local run name rack minpart spark_runs=("spark-no-rack - 0" "spark-az-a az-a 0" "spark-minpart az-a $((parts * 3))")
	for run in "${spark_runs[@]}"; do
		read -r name rack minpart <<<"$run"
		compare_wanted "$name" || continue
		[[ $rack == - ]] && rack=
		if [[ ! -e $ZL_STATE/spark/master.pid ]]; then
			EXIT_HOOKS+=(spark_down)
			spark_up "$home"
		fi
		cat >"$dir/$name.sh" <<-EOF
			exec "$home/bin/spark-submit" --master "$SPARK_MASTER_URL" --deploy-mode client \\
			  --conf spark.driver.host=$SPARK_MASTER_ADDR --conf spark.driver.bindAddress=$SPARK_MASTER_ADDR \\
			  --conf spark.ui.enabled=false --driver-memory 1g --executor-memory 1g \\
			  --conf spark.executor.cores=1 --conf spark.cores.max=3 --jars "$SPARK_JARS" \\
			  "$LOGSTORE_ROOT/scripts/bench_spark.py" --brokers "$b" --topic "$topic" \\
			  --output "$dir/$name/out" --checkpoint "$dir/$name/checkpoint" ${rack:+--rack $rack} --min-partitions $minpart
		EOF
		compare_run "$name" "$dir" "$dir/$name.sh"
		verify "$dir/$name/out" "$dir/$name/verify.json"
	done
	spark_down

	if compare_wanted logstore; then
		# shellcheck disable=SC2016 # logstore expands it, per member
		job_config "$dir/logstore.yaml" "$b" "$topic" "$topic-logstore" "$dir/logstore-members/out" '${LOGSTORE_RACK}'
		{
			local z
			for z in "${ZONES[@]}"; do
				echo "ip netns exec $(ns_of "$z") env LOGSTORE_RACK=$z \"$dir/logstore\" run -c \"$dir/logstore.yaml\" --until now >\"$dir/logstore-members/member-$z.log\" 2>&1 &"
			done
			echo 'for p in $(jobs -p); do wait "$p" || exit 1; done'
		} >"$dir/logstore.sh"
		compare_run logstore-members "$dir" "$dir/logstore.sh"
		verify "$dir/logstore-members/out" "$dir/logstore-members/verify.json"
	fi

	if compare_wanted kafka-go; then
		{
			for z in "${ZONES[@]}"; do
				echo "ip netns exec $(ns_of "$z") \"$dir/labclient\" read -brokers \"$b\" -topic $topic -group $topic-kafka-go -rack $z -out \"$dir/kafka-go/$z.txt\" >\"$dir/kafka-go/member-$z.log\" 2>&1 &"
			done
			echo "\"$dir/labclient\" lag -brokers \"$b\" -topic $topic -group $topic-kafka-go -timeout 600s || exit 1"
			echo 'kill -TERM $(jobs -p); for p in $(jobs -p); do wait "$p" || exit 1; done'
		} >"$dir/kafka-go.sh"
		compare_run kafka-go "$dir" "$dir/kafka-go.sh"
		cat "$dir"/kafka-go/az-*.txt | "$PY" -c '
import json, sys
pairs = [tuple(map(int, l.split())) for l in sys.stdin]
json.dump({"rows": len(pairs), "distinct": len(set(pairs)), "offset_sum": sum(o for _, o in pairs), "bytes": 0, "files": 0}, open(sys.argv[1], "w"))
' "$dir/kafka-go/verify.json"
	fi

	compare_report "$dir" "$records"
	compare_chart "$dir"
	kafka_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$b" --delete --topic "$topic" >/dev/null 2>&1 || true
}

compare_report() {
	"$PY" - "$1" "$2" <<-'PY' | tee "$1/compare.md"
		import json, os, sys
		d, n = sys.argv[1], int(sys.argv[2])
		zones = ["az-a", "az-b", "az-c"]
		runs = ["spark-no-rack", "spark-az-a", "spark-minpart", "logstore-members", "kafka-go"]
		labels = {"spark-no-rack": "Spark, no client.rack", "spark-az-a": "Spark, client.rack=az-a",
		          "spark-minpart": "Spark, client.rack=az-a, minPartitions=3x partitions",
		          "logstore-members": "logstore", "kafka-go": "kafka-go Reader, RackAffinityGroupBalancer"}
		mib = lambda b: f"{b / 2**20:,.1f} MiB"
		print(f"\n### Zone lab: {n:,} records, 12 partitions, RF 3, a reader in each of three zones (leaders {open(os.path.join(d, 'leaders.txt')).read().strip()})\n")
		print("| run | cross-zone, kernel | az-a | az-b | az-c | bytes into the zones | $ per TB read (cross-zone, $0.01/GB each way) | rows | wall s | CPU s | peak RSS |")
		print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		res = {}
		base = None
		for r in runs:
		    p = os.path.join(d, r)
		    if not os.path.exists(os.path.join(p, "kernel.txt")):
		        continue
		    k = {}
		    for line in open(os.path.join(p, "kernel.txt")):
		        to, frm, b = line.split()
		        k.setdefault(to, {})[frm] = int(b)
		    per = {z: (sum(k[z].values()) - k[z].get(z, 0), sum(k[z].values())) for z in zones}
		    cross = sum(c for c, _ in per.values())
		    tot = sum(t for _, t in per.values())
		    m = json.load(open(os.path.join(p, "measure.json")))
		    u = json.load(open(os.path.join(p, "usage.json")))
		    v = json.load(open(os.path.join(p, "verify.json")))
		    # The driver's tree (Spark) is measured in the root namespace; for
		    # logstore and kafka-go that tree is the members, sampled in zones.
		    driver_cpu = m["cpu_s"] if r.startswith("spark") else 0
		    driver_rss = m["peak_rss"] if r.startswith("spark") else 0
		    cpu = driver_cpu + sum(x["cpu_s"] for x in u.values())
		    rss = driver_rss + sum(x["peak_rss"] for x in u.values())
		    share = cross / tot if tot else 0
		    pz = lambda z: f"{100 * per[z][0] / per[z][1]:.1f} %" if per[z][1] else "–"
		    rows = f"{v['rows']:,}" + ("" if v["rows"] == v["distinct"] == n else f" ({v['distinct']:,} distinct)")
		    print(f"| {labels[r]} | **{100 * share:.1f} %** of {mib(tot)} | {pz('az-a')} | {pz('az-b')} | {pz('az-c')} | {mib(tot)} | ${share * 20:.2f} | {rows} | {m['wall_s']:.1f} | {cpu:.1f} | {mib(rss)} |")
		    res[r] = {"kernel": k, "cross": cross, "total": tot, "share": share, "measure": m, "usage": u, "verify": v, "cpu_s": cpu, "peak_rss": rss}
		keys = ("rows", "distinct", "offset_sum", "status_sum", "latency_centi_sum", "errors", "ts_min", "ts_max")
		parquet = [r for r in ("spark-no-rack", "spark-az-a", "spark-minpart", "logstore-members") if r in res]
		same = len({tuple(res[r]["verify"].get(x) for x in keys) for r in parquet}) == 1
		print(f"\nParquet outputs ({', '.join(parquet)}) read back by pyarrow: {'the same rows' if same else 'DIFFERENT'} "
		      f"(count, distinct (partition, offset), sums of offsets, status and latency, is_error count, first and last ts).")
		print("kafka-go's Reader writes no Parquet; its column counts the (partition, offset) pairs it received.")
		print("CPU and peak RSS: every process in the three zones except the brokers (Spark's worker daemons and executors, the logstore or kafka-go members),"
		      " plus the Spark driver's process tree in the root namespace; the Spark master is not counted. Wall time: process start to exit,"
		      " for kafka-go until the group had committed every record.")
		json.dump({"records": n, "runs": res, "same_rows": same}, open(os.path.join(d, "compare.json"), "w"), indent=1)
	PY
}

# compare_chart DIR: DIR/compare.png from DIR/compare.json, per run the
# cross-zone share by the kernel and the CPU seconds per million records.
compare_chart() {
	"$PY" -c 'import matplotlib' 2>/dev/null || "$VENV/bin/pip" install -q matplotlib || {
		warn "no matplotlib; no chart"
		return 0
	}
	"$PY" - "$1" <<-'PY'
		import json, os, sys
		import matplotlib
		matplotlib.use("Agg")
		import matplotlib.pyplot as plt
		d = sys.argv[1]
		c = json.load(open(os.path.join(d, "compare.json")))
		labels = {"spark-no-rack": "Spark\nno client.rack", "spark-az-a": "Spark\nclient.rack=az-a",
		          "spark-minpart": "Spark, client.rack=az-a\nminPartitions=3x",
		          "logstore-members": "logstore", "kafka-go": "kafka-go Reader\n(receives only)"}
		runs = [r for r in labels if r in c["runs"]]
		share = [100 * c["runs"][r]["share"] for r in runs]
		cpu = [c["runs"][r]["cpu_s"] / c["records"] * 1e6 for r in runs]
		fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.6))
		for ax, vals, title, fmt in ((a, share, "bytes read across zones (kernel), %", "{:.1f} %"),
		                             (b, cpu, "CPU seconds per million records", "{:,.0f} s")):
		    bars = ax.barh([labels[r] for r in runs], vals, color=["#c0504d" if r.startswith("spark") else "#4f81bd" for r in runs])
		    ax.invert_yaxis()
		    ax.set_title(title, fontsize=10)
		    for bar, v in zip(bars, vals):
		        ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, " " + fmt.format(v), va="center", fontsize=8)
		    ax.set_xlim(0, max(vals) * 1.3 or 1)
		fig.suptitle(f"{c['records']:,} records, 12 partitions, RF 3, one reader per zone", fontsize=10)
		fig.tight_layout()
		fig.savefig(os.path.join(d, "compare.png"), dpi=110)
	PY
}
