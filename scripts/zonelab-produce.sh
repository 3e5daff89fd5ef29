# shellcheck shell=bash
# `scripts/zonelab.sh run --produce`: the write side in the zone lab. The
# members read the input topic as in a plain run and also produce every row
# to an output topic (sinks.kafka, keyless rows, leaders spread over the
# three zones); the kernel's ZONELAB_OUT counters give, per zone, the bytes
# its clients sent to each broker's client port. Sourced by zonelab.sh;
# don't run it.
#
# Phases, one after the other on the same input topic, each with its own
# output topic and group, the counters zeroed before each:
#   logstore-read-only    no Kafka output: what reading alone sends to
#                         brokers (fetch requests, acknowledgements, the
#                         group's requests, metadata), the baseline
#   logstore-rack-aware   sinks.kafka.partitioner: rack-aware
#   logstore-sticky       sinks.kafka.partitioner: sticky (rack-blind: what
#                         the job did before, its rows over every partition)
#   perf-rack-aware       Kafka's own ProducerPerformance in each zone's
#                         namespace, client.rack=<zone>,
#                         partitioner.rack.aware=true (KIP-1123): the anchor
#   perf-rack-blind       the same with partitioner.rack.aware=false
# Each ProducerPerformance sends a third of the records, values drawn from
# the same logs (lz4, acks=all, linger.ms=50 as the Kafka sink's
# batch_timeout). With --restart, one phase instead (restart): the members
# stream with the rack-aware partitioner (batches cut every second) while
# scripts/labclient produces the input, the az-a broker is restarted as in
# `run --restart`, a preferred-leader election gives it its output
# partitions back once it is in sync, and the lab reports per second what
# az-a's member sent to its own zone and to the others, beside how many
# output partitions broker 1 leads.
#
# What a zone sends to brokers is not only produce requests: fetch requests,
# TCP acknowledgements of what it reads, offset commits, heartbeats and
# metadata go the same way: the read-only phase measures them. The report
# shows logstore's own logstore_produce_bytes_total{locality}
# (acknowledged record batches) beside the kernel's bytes, and the kernel's
# bytes net of the read-only phase's.

# The members' metrics listener, inside each zone's namespace.
PRODUCE_METRICS_PORT=9464
# A --restart --produce run: a second in which az-a's member sends more than
# this to other zones' brokers counts as producing across zones. Above the
# group's own traffic (with a batch cut every second, two offset commits a
# second per partition to a coordinator in another zone: 3-5 KB/s in the
# lab), below a fifth of one zone's share of the rows at ZONELAB_RATE
# (60-120 KB/s).
PRODUCE_CROSS_BPS=20000

# produce_job_config FILE INPUT GROUP OUT_DIR OUTPUT PARTITIONER: the lab's
# job (job_config) with the Kafka output on (off for PARTITIONER none) and
# metrics to scrape.
produce_job_config() {
	# shellcheck disable=SC2016 # logstore expands it, per member
	job_config "$1" "$(bootstrap)" "$2" "$3" "$4" '${LOGSTORE_RACK}'
	[[ $6 == none ]] || sed -i "/^sinks:\$/a\\  kafka:\\n    topic: $5\\n    partitioner: $6" "$1"
	printf 'metrics:\n  listen: ":%d"\n' "$PRODUCE_METRICS_PORT" >>"$1"
}

# create_topic NAME PARTITIONS RF, and its leaders in DIR/leaders.txt when
# DIR is given as $4.
create_topic() {
	kafka_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$(bootstrap)" \
		--create --topic "$1" --partitions "$2" --replication-factor "$3" >/dev/null
	[[ -z ${4:-} ]] || leaders "$1" >"$4/leaders.txt"
}

# end_offsets TOPIC: "PARTITION END_OFFSET" lines.
end_offsets() {
	kafka_tool org.apache.kafka.tools.GetOffsetShell --bootstrap-server "$(bootstrap)" --topic "$1" 2>/dev/null |
		awk -F: '{ print $2, $3 }'
}

# scrape_metrics ZONE OUT: the zone's member's logstore_produce_bytes_total
# and logstore_fetch_bytes_total lines.
scrape_metrics() {
	in_ns "$(ns_of "$1")" curl -sf "http://127.0.0.1:$PRODUCE_METRICS_PORT/metrics" |
		grep -E '^logstore_(produce|fetch)_bytes_total' >"$2" || warn "could not scrape $1's member's metrics"
}

# run_produce DIR INPUT RECORDS PARTITIONS RF RESTART MEMBERS: the phases
# above, then the report.
run_produce() {
	local dir=$1 input=$2 records=$3 parts=$4 rf=$5 restart=$6
	local -a zones pids=()
	IFS=, read -r -a zones <<<"$7"
	local helpers=""
	# shellcheck disable=SC2329 # called by the trap
	stop_produce() {
		local p z
		for p in "${pids[@]}" $helpers; do kill -TERM "$p" 2>/dev/null || true; done
		for z in "${ZONES[@]}"; do
			for p in $(ns_pids "$(ns_of "$z")"); do
				[[ $(cmdline_of "$p") == *"$dir/"* ]] && kill -TERM "$p" 2>/dev/null
			done
		done
		wait 2>/dev/null || true
	}
	EXIT_HOOKS+=(stop_produce)
	if ((restart)); then
		produce_phase_logstore restart rack-aware
	else
		# The anchor's values: the same logs, one per line.
		"$ARROW_PY" -c 'import json, sys
for i, l in enumerate(open(sys.argv[1])):
    if i == 20000: break
    print(json.loads(l)["value"])' "$dir/capture.jsonl" >"$dir/payloads.txt"
		local phase
		for phase in ${ZONELAB_PRODUCE_PHASES//,/ }; do
			case $phase in
			logstore-read-only) produce_phase_logstore "$phase" none ;;
			logstore-rack-aware) produce_phase_logstore "$phase" rack-aware ;;
			logstore-sticky) produce_phase_logstore "$phase" sticky ;;
			perf-rack-aware) produce_phase_perf "$phase" true ;;
			perf-rack-blind) produce_phase_perf "$phase" false ;;
			*) die "ZONELAB_PRODUCE_PHASES: no phase $phase" ;;
			esac
		done
	fi
	stop_produce
	unset 'EXIT_HOOKS[-1]'
	rm -f "$dir/capture.jsonl"
	report_produce "$dir" "$records" "$parts" "$rf" "$restart" "$input"
	# Left behind, each run's six topics of 12 partitions made every later
	# metadata answer and broker restart in the lab heavier.
	kafka_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$(bootstrap)" \
		--delete --topic "$input(-.*)?" >/dev/null 2>&1 || true
}

# produce_phase_logstore NAME PARTITIONER: one member per zone reads the
# whole input (a group of its own) and produces every row to a new output
# topic; stopped (SIGTERM) once the group committed it all, after its
# metrics were scraped.
produce_phase_logstore() {
	local name=$1 d=$dir/$1 output="$input-$1" i z
	mkdir -p "$d"
	if [[ $2 == none ]]; then
		echo "none (no Kafka output)" >"$d/leaders.txt"
		say "$name: members read, no Kafka output"
	else
		create_topic "$output" "$parts" "$rf" "$d"
		say "$name: members produce to $output ($(cat "$d/leaders.txt")), sinks.kafka.partitioner $2"
	fi
	produce_job_config "$d/job.yaml" "$input" "$output" "$d/out" "$output" "$2"
	# Batches cut every second, so the Kafka output produces every second
	# and the per-second samples show where each second's rows went (cut
	# every 10 s, the rows go in bursts and most seconds say nothing).
	[[ $name != restart ]] || sed -i 's/^  max_age: 10s$/  max_age: 1s/' "$d/job.yaml"
	DIR=$d
	: >"$d/events.txt"
	counters_zero
	sample_counters "$d/samples-in.txt" "$d/samples-out.txt" &
	helpers=$!
	event start
	pids=()
	start_members "$d/job.yaml" "$d"
	if [[ $name == restart ]]; then
		"$dir/labclient" isr -brokers "$(bootstrap)" -topic "$output" >"$d/isr.txt" 2>/dev/null &
		helpers+=" $!"
		"$dir/labclient" leaders -brokers "$(bootstrap)" -topic "$output" >"$d/leader-samples.txt" 2>/dev/null &
		helpers+=" $!"
		local producer
		start_input "$input" "$d/produce.log"
		restart_az_a "$d/isr.txt"
		# Kafka gives a restarted broker its partitions back at its next
		# leader-imbalance check (leader.imbalance.check.interval.seconds,
		# 300 s by default); the lab does what that check does, now.
		elect_preferred "$output" "$d"
		event elected
		sleep "$ZONELAB_AFTER"
		stop_input "$d/produce.log"
	fi
	"$dir/labclient" lag -brokers "$(bootstrap)" -topic "$input" -group "$output" -timeout 300s ||
		{
			tail_logs "$d"/member-*.log
			die "$name: the members did not commit every record"
		}
	event committed
	for i in "${!zones[@]}"; do scrape_metrics "${zones[i]}" "$d/metrics-${zones[i]}.txt"; done
	for i in "${!pids[@]}"; do kill -TERM "${pids[i]}"; done
	local failed=0
	wait_members "$d"
	event end
	sleep 1 # one more sample after the end
	for z in $helpers; do kill -TERM "$z" 2>/dev/null || true; done
	wait 2>/dev/null || true
	helpers=""
	counters_read in >"$d/kernel-in.txt"
	counters_read out >"$d/kernel-out.txt"
	((failed == 0)) || die "$name: a member failed; logs in $d"
	if [[ $2 == none ]]; then : >"$d/end-offsets.txt"; else end_offsets "$output" >"$d/end-offsets.txt"; fi
	echo "$records" >"$d/records.txt"
	"$ARROW_PY" "$LOGSTORE_ROOT/scripts/verify_dataset.py" "$d/out" >"$d/verify.json" ||
		die "pyarrow could not read $d/out"
}

# elect_preferred TOPIC DIR: a preferred-leader election on every partition
# of TOPIC (the restarted broker must be in their ISR; tried for a minute).
# Only TOPIC's: the group coordinators stay where they are.
elect_preferred() {
	local deadline=$((SECONDS + 60))
	"$ARROW_PY" -c 'import json, sys
print(json.dumps({"partitions": [{"topic": sys.argv[1], "partition": p} for p in range(int(sys.argv[2]))]}))' "$1" "$parts" >"$2/election.json"
	until kafka_tool org.apache.kafka.tools.LeaderElectionCommand --bootstrap-server "$(bootstrap)" \
		--election-type PREFERRED --path-to-json-file "$2/election.json" >>"$2/election.log" 2>&1 &&
		[[ $(tail -n 1 "$2/leader-samples.txt" | cut -d' ' -f2) -gt 0 ]]; do
		((SECONDS < deadline)) || die "broker 1 leads no partition of $1 a minute after the elections; see $2/election.log"
		sleep 1
	done
}

# produce_phase_perf NAME RACK_AWARE: ProducerPerformance in every zone at
# once, a third of the records each, partitioner.rack.aware=RACK_AWARE.
produce_phase_perf() {
	local name=$1 d=$dir/$1 output="$input-$1" i z
	local -a perf=()
	mkdir -p "$d"
	create_topic "$output" "$parts" "$rf" "$d"
	say "$name: ProducerPerformance in each zone to $output ($(cat "$d/leaders.txt")), partitioner.rack.aware=$2"
	DIR=$d
	: >"$d/events.txt"
	counters_zero
	event start
	for z in "${zones[@]}"; do
		ip netns exec "$(ns_of "$z")" env LOGSTORE_STATE="$ZL_STATE" bash "$LOGSTORE_ROOT/scripts/kafka-cluster.sh" tool \
			org.apache.kafka.tools.ProducerPerformance --bootstrap-server "$(bootstrap)" --topic "$output" \
			--num-records $((records / ${#zones[@]})) --throughput -1 --payload-file "$dir/payloads.txt" \
			--command-property acks=all compression.type=lz4 linger.ms=50 "client.rack=$z" \
			"partitioner.rack.aware=$2" >"$d/perf-$z.log" 2>&1 &
		perf+=($!)
	done
	for i in "${!perf[@]}"; do
		wait "${perf[i]}" || {
			tail_logs "$d/perf-${zones[i]}.log"
			die "$name: ProducerPerformance in ${zones[i]} failed"
		}
	done
	event end
	counters_read in >"$d/kernel-in.txt"
	counters_read out >"$d/kernel-out.txt"
	end_offsets "$output" >"$d/end-offsets.txt"
	echo $((records / ${#zones[@]} * ${#zones[@]})) >"$d/records.txt"
}

# report_produce DIR RECORDS PARTITIONS RF RESTART INPUT: the tables, and
# DIR/result.json.
report_produce() {
	"$ARROW_PY" - "$@" "$PRODUCE_CROSS_BPS" "$ZONELAB_PRODUCE_PHASES" <<-'PY'
		import json, os, re, sys
		sys.path.insert(0, os.path.join(os.environ["LOGSTORE_ROOT"], "scripts"))
		import zonelab_samples
		d, n, parts, rf, restart, topic, cross_bps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1", sys.argv[6], int(sys.argv[7])
		zones = ["az-a", "az-b", "az-c"]
		pct = lambda c, t: f"{100 * c / t:.3f} %" if t else "–"

		def kernel(path):
		    k = {}
		    for line in open(path):
		        z, b, v = line.split()
		        k.setdefault(z, {})[b] = int(v)
		    return k

		def metric(path, name):
		    """Sums of name by locality (same-rack, cross-rack)."""
		    s = {"same-rack": 0, "cross-rack": 0}
		    if os.path.exists(path):
		        for line in open(path):
		            m = re.match(name + r'\{.*locality="([a-z-]+)".*\} (\S+)', line)
		            if m:
		                s[m.group(1)] += int(float(m.group(2)))
		    return s

		def phase(name):
		    p = os.path.join(d, name)
		    out, inn = kernel(os.path.join(p, "kernel-out.txt")), kernel(os.path.join(p, "kernel-in.txt"))
		    ends = {int(a): int(b) for a, b in (l.split() for l in open(os.path.join(p, "end-offsets.txt")))}
		    res = {"leaders": open(os.path.join(p, "leaders.txt")).read().strip(), "records": int(open(os.path.join(p, "records.txt")).read()),
		           "produced": sum(ends.values()), "end_offsets": ends, "zones": []}
		    for z in zones:
		        o = out.get(z, {})
		        same, cross = o.get(z, 0), sum(v for b, v in o.items() if b != z)
		        i = inn.get(z, {})
		        row = {"zone": z, "kernel_to": o, "kernel_same": same, "kernel_cross": cross,
		               "kernel_in_same": i.get(z, 0), "kernel_in_cross": sum(v for b, v in i.items() if b != z)}
		        mp = os.path.join(p, f"metrics-{z}.txt")
		        if os.path.exists(mp):
		            pr, fe = metric(mp, "logstore_produce_bytes_total"), metric(mp, "logstore_fetch_bytes_total")
		            row.update({"logstore_same": pr["same-rack"], "logstore_cross": pr["cross-rack"],
		                        "logstore_fetch_same": fe["same-rack"], "logstore_fetch_cross": fe["cross-rack"]})
		        res["zones"].append(row)
		    res["kernel_same"] = sum(r["kernel_same"] for r in res["zones"])
		    res["kernel_cross"] = sum(r["kernel_cross"] for r in res["zones"])
		    t = res["kernel_same"] + res["kernel_cross"]
		    res["kernel_cross_share"] = res["kernel_cross"] / t if t else 0
		    v = os.path.join(p, "verify.json")
		    if os.path.exists(v):
		        res["verify_rows"] = json.load(open(v))["rows"]
		    return res

		def table(name, res):
		    print(f"\n{name}: {res['records']:,} records, output topic {parts} partitions RF {rf}, leaders {res['leaders']}; the output topic holds {res['produced']:,} records")
		    lsm = "logstore_same" in res["zones"][0]
		    print("\n| zone | kernel: to az-a | to az-b | to az-c | same-zone | cross-zone | cross % |" + (" logstore produced: same-rack | cross-rack | cross % | kernel, read: cross % |" if lsm else ""))
		    print("|---|---:|---:|---:|---:|---:|---:|" + ("---:|---:|---:|---:|" if lsm else ""))
		    for r in res["zones"]:
		        k = r["kernel_to"]
		        line = f"| {r['zone']} | {k.get('az-a', 0):,} | {k.get('az-b', 0):,} | {k.get('az-c', 0):,} | {r['kernel_same']:,} | {r['kernel_cross']:,} | {pct(r['kernel_cross'], r['kernel_same'] + r['kernel_cross'])} |"
		        if lsm:
		            ls, lc = r["logstore_same"], r["logstore_cross"]
		            line += f" {ls:,} | {lc:,} | {pct(lc, ls + lc)} | {pct(r['kernel_in_cross'], r['kernel_in_same'] + r['kernel_in_cross'])} |"
		        print(line)
		    print(f"| all zones | | | | {res['kernel_same']:,} | {res['kernel_cross']:,} | {100 * res['kernel_cross_share']:.3f} % |" + (" | | | |" if lsm else ""))

		result = {"records": n, "partitions": parts, "rf": rf, "topic": topic, "phases": {}}
		names = ["restart"] if restart else sys.argv[8].split(",")
		for name in names:
		    res = phase(name)
		    result["phases"][name] = res
		    table(name, res)
		if not restart:
		    ph = result["phases"]
		    base = ph["logstore-read-only"]
		    print("\nbytes the zones sent to brokers in other zones, by the kernel (logstore: also net of what reading alone sent):")
		    for name in names:
		        r = ph[name]
		        tot = r["kernel_same"] + r["kernel_cross"]
		        line = f"  {name:22s} {100 * r['kernel_cross_share']:7.3f} % of {tot:,} bytes"
		        if name.startswith("logstore-") and name != "logstore-read-only":
		            nc, nt = r["kernel_cross"] - base["kernel_cross"], tot - base["kernel_same"] - base["kernel_cross"]
		            r["net_cross"], r["net_total"] = nc, nt
		            r["net_cross_share"] = nc / nt if nt else 0
		            line += f"; net of reading: {100 * r['net_cross_share']:.3f} % of {nt:,} bytes"
		        print(line)
		else:
		    p = os.path.join(d, "restart")
		    events = [l.split() for l in open(os.path.join(p, "events.txt"))]
		    t0 = int(events[0][1])
		    ev = {k: (int(v) - t0) / 1e3 for k, v in events}
		    rel = lambda ms: (int(ms) - t0) / 1e3
		    samples = zonelab_samples.load(os.path.join(p, "samples-out.txt"), "az-a")
		    led = [(rel(t), int(a)) for t, a, *_ in (l.split() for l in open(os.path.join(p, "leader-samples.txt")))]
		    # Leading again: the first sample after the restart in which broker
		    # 1 leads a partition of the output topic.
		    lead_at = next((t for t, a in led if t > ev["restart"] and a > 0), None)
		    led_by_1 = lambda t: zonelab_samples.at(led, t)
		    per_s = []
		    print(f"\naz-a member's produce side, per second by the kernel. az-a broker: stop at {ev['stop']:.1f} s, down at {ev['stopped']:.1f} s,"
		          f" started at {ev['restart']:.1f} s, registered at {ev['registered']:.1f} s, in every ISR at {ev['in-sync']:.1f} s,"
		          f" elections done at {ev['elected']:.1f} s, leading again at {f'{lead_at:.1f} s' if lead_at is not None else 'never'}\n")
		    print("| t s | to az-a bytes/s | to other zones bytes/s | cross % | output partitions led by broker 1 |")
		    print("|---:|---:|---:|---:|---:|")
		    for a, b, same, cross in zonelab_samples.per_second(samples, "az-a"):
		        t = rel(b)
		        per_s.append({"t": round(t, 2), "from": round(rel(a), 2), "same": round(same), "cross": round(cross), "led_by_1": led_by_1(t)})
		        print(f"| {t:.1f} | {same:,.0f} | {cross:,.0f} | {pct(cross, same + cross)} | {led_by_1(t)} |")
		    # In zone again: the end of the last second after broker 1 leads
		    # again in which az-a sent more than cross_bps to other zones (0
		    # when none); the seconds before the restart set the baseline.
		    # Seconds that began before it led again are not judged.
		    after = [s for s in per_s if lead_at is not None and s["from"] >= lead_at]
		    busy = [s["t"] for s in after if s["cross"] > cross_bps]
		    back = (busy[-1] - lead_at) if busy else 0.0
		    # And the first: the end of the first second after it whose bytes
		    # to other zones stayed under cross_bps.
		    first = next((s["t"] - lead_at for s in after if s["cross"] <= cross_bps), None)
		    before = [s for s in per_s if s["t"] < ev["stop"]]
		    steady = lambda ss: sum(s["cross"] for s in ss) / max(1, sum(s["same"] + s["cross"] for s in ss))
		    late = [s for s in after if s["t"] > lead_at + 5]
		    if lead_at is not None:
		        print(f"\naz-a member: first second under {cross_bps:,} B/s to other zones ended {f'{first:.1f} s after' if first is not None else 'never after'} broker 1 led again;"
		              f" last second above it: {f'{back:.1f} s after' if busy else 'none after'};"
		              f" cross-zone share of its bytes before the stop {100 * steady(before):.2f} %, from 5 s after leading again to the end {100 * steady(late):.2f} %")
		    result["restart"] = {"events": ev, "lead_at": lead_at, "az_a_per_second": per_s, "local_again_after_lead_s": back, "first_local_after_lead_s": first,
		                         "cross_share_before_stop": steady(before), "cross_share_5s_after_lead": steady(late)}
		with open(os.path.join(d, "result.json"), "w") as f:
		    json.dump(result, f, indent=1)
	PY
}
