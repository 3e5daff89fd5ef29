# shellcheck shell=bash
# `scripts/zonelab.sh run --churn [--group-protocol classic|consumer]`:
# zone-local reading while members join and leave, by the kernel. Sourced
# by zonelab.sh; don't run it.
#
# One member per zone streams while scripts/labclient produces at
# ZONELAB_RATE records/s; after ZONELAB_CHURN_STEADY seconds, the events,
# ZONELAB_CHURN_SETTLE seconds apart (members are dynamic, as by default):
#
#   join     a fourth member starts in az-a
#   restart  the az-b member gets SIGTERM, as a rolling deploy sends it,
#            and starts again ZONELAB_CHURN_DOWN seconds after it exited
#   leave    the fourth member gets SIGTERM
#
# then the producer stops, the group commits the end of every partition and
# every member gets SIGTERM. The counters are sampled every second, so the
# report gives, for the whole run and for each event's window, the bytes
# the brokers' client ports sent into the zones and the share that came
# from another zone's broker. Group traffic to a coordinator in another
# zone cannot be made local (one broker coordinates the group): the report
# splits what crossed zones into bytes from the group coordinator's broker
# and from the other brokers, and gives logstore's own count of fetched
# bytes that crossed (logstore_fetch_bytes_total{locality="cross-rack"},
# from each member's exit summary): what crossed beyond it is requests
# other than fetches (group, commits, metadata) and TCP/IP headers.

ZONELAB_CHURN_STEADY="${ZONELAB_CHURN_STEADY:-20}"
ZONELAB_CHURN_SETTLE="${ZONELAB_CHURN_SETTLE:-20}"
ZONELAB_CHURN_DOWN="${ZONELAB_CHURN_DOWN:-5}"

# run_churn TOPIC: the events above, once cmd_run has started the
# sampler, the three members (its pids) and nothing else; returns once
# every member that runs got SIGTERM. The members it starts are pids[3]
# and pids[4], their zones zones[3] and zones[4], so cmd_run waits for
# them as for its own.
run_churn() {
	local producer
	start_input "$1" "$dir/produce.log"
	sleep "$ZONELAB_CHURN_STEADY"

	event join
	churn_member 3 az-a
	sleep "$ZONELAB_CHURN_SETTLE"

	churn_stop 1 restart
	sleep "$ZONELAB_CHURN_DOWN"
	event restart-started
	churn_member 4 az-b
	sleep "$ZONELAB_CHURN_SETTLE"

	churn_stop 3 leave
	sleep "$ZONELAB_CHURN_SETTLE"

	event drain
	stop_input "$dir/produce.log"
	"$dir/labclient" lag -brokers "$(bootstrap)" -topic "$1" -group "$1" -timeout 180s ||
		die "the group did not commit every record; logs in $dir"
	event committed
	coordinator "$1" >"$dir/coordinator.txt"
	local i
	for i in "${!pids[@]}"; do [[ -z ${pids[i]} ]] || kill -TERM "${pids[i]}"; done
}

# churn_member I ZONE: member I (its log member-I-ZONE.log) starts in ZONE;
# pids[I] is its pid, zones[I] its zone.
churn_member() {
	zones[$1]=$2
	ip netns exec "$(ns_of "$2")" env LOGSTORE_RACK="$2" \
		"$dir/logstore" run -c "$dir/job.yaml" >"$dir/member-$1-$2.log" 2>&1 &
	pids[$1]=$!
}

# churn_stop I NAME: SIGTERM to member I; notes NAME and NAME-stopped.
churn_stop() {
	event "$2"
	kill -TERM "${pids[$1]}"
	wait "${pids[$1]}" || {
		tail_logs "$dir"/member-"$1"-*.log
		die "member $1 failed to stop cleanly"
	}
	pids[$1]=""
	event "$2-stopped"
}

# coordinator GROUP prints the node id of GROUP's coordinator.
coordinator() {
	kafka_tool org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --bootstrap-server "$(bootstrap)" \
		--describe --group "$1" --state 2>/dev/null | sed -nE 's/.*\(([0-9]+)\).*/\1/p' | head -n 1
}

# report_churn DIR RECORDS PARTITIONS RF PROTOCOL TOPIC: the tables, and
# DIR/result.json.
report_churn() {
	"$ARROW_PY" - "$@" <<-'PY'
		import json, os, re, sys
		sys.path.insert(0, os.path.join(os.environ["LOGSTORE_ROOT"], "scripts"))
		import zonelab_samples
		d, n, parts, rf, protocol, topic = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
		zones = ["az-a", "az-b", "az-c"]
		coord_id = open(os.path.join(d, "coordinator.txt")).read().strip()
		coord = zones[int(coord_id) - 1] if coord_id else None
		events = [(k, int(v)) for k, v in (l.split() for l in open(os.path.join(d, "events.txt")))]
		at = dict(events)
		t0 = at["start"]
		samples = {z: zonelab_samples.load(os.path.join(d, "samples.txt"), z) for z in zones}
		times = sorted(samples["az-a"])

		def counters(t):
		    """Each zone's running totals by broker zone at the last sample at or before t."""
		    ts = [u for u in times if u <= t] or times[:1]
		    return {z: samples[z].get(ts[-1], {}) for z in zones}

		def window(lo, hi):
		    a, b = counters(lo), counters(hi)
		    same = cross = from_coord = 0
		    for z in zones:
		        for broker in zones:
		            v = b[z].get(broker, 0) - a[z].get(broker, 0)
		            if broker == z:
		                same += v
		            else:
		                cross += v
		                if broker == coord:
		                    from_coord += v
		    return {"same": same, "cross": cross, "cross_from_coordinator": from_coord, "cross_from_others": cross - from_coord}

		pct = lambda c, t: f"{100 * c / t:.3f} %" if t else "–"
		# The kernel's totals over the run, from the counters read at the end.
		kernel = {}
		for line in open(os.path.join(d, "kernel.txt")):
		    to, frm, b = line.split()
		    kernel.setdefault(to, {})[frm] = int(b)
		members, ls_same, ls_cross = {}, 0, 0
		for f in sorted(os.listdir(d)):
		    m = re.fullmatch(r"member-(\d+)-(az-\w)\.log", f)
		    if not m:
		        continue
		    fb = re.search(r"fetched bytes\s+(\d+) same-rack, (\d+) cross-rack", open(os.path.join(d, f)).read())
		    rec = {"zone": m.group(2)}
		    if fb:
		        rec["same"], rec["cross"] = int(fb.group(1)), int(fb.group(2))
		        ls_same += rec["same"]
		        ls_cross += rec["cross"]
		    members[m.group(1)] = rec
		whole = {"same": 0, "cross": 0, "cross_from_coordinator": 0}
		print(f"\nzone lab, members joining and leaving: group_protocol {protocol}, {n:,} records, {parts} partitions, RF {rf},"
		      f" leaders {open(os.path.join(d, 'leaders.txt')).read().strip()}, group coordinator {coord} (broker {coord_id})")
		print("\n| zone | kernel: from az-a | from az-b | from az-c | same-zone | cross-zone | cross % |")
		print("|---|---:|---:|---:|---:|---:|---:|")
		for z in zones:
		    k = kernel.get(z, {})
		    same, cross = k.get(z, 0), sum(v for b, v in k.items() if b != z)
		    whole["same"] += same
		    whole["cross"] += cross
		    whole["cross_from_coordinator"] += k.get(coord, 0) if coord != z else 0
		    print(f"| {z} | {k.get('az-a', 0):,} | {k.get('az-b', 0):,} | {k.get('az-c', 0):,} | {same:,} | {cross:,} | {pct(cross, same + cross)} |")
		whole["cross_from_others"] = whole["cross"] - whole["cross_from_coordinator"]
		total = whole["same"] + whole["cross"]
		print(f"| all zones | | | | {whole['same']:,} | {whole['cross']:,} | {pct(whole['cross'], total)} |")
		spans = [("steady", "start", "join"), ("join", "join", "restart"), ("restart", "restart", "leave"),
		         ("leave", "leave", "drain"), ("drain and stop", "drain", "end")]
		rows = []
		print("\n| window | s | bytes into the zones | cross-zone | cross % | of which from the coordinator's broker | from other brokers | from other brokers, % |")
		print("|---|---:|---:|---:|---:|---:|---:|---:|")
		for name, lo, hi in spans:
		    w = window(at[lo], at[hi] + (1500 if hi == "end" else 0))
		    t = w["same"] + w["cross"]
		    w.update({"window": name, "from_s": (at[lo] - t0) / 1e3, "to_s": (at[hi] - t0) / 1e3})
		    rows.append(w)
		    print(f"| {name} | {(at[hi] - at[lo]) / 1e3:.0f} | {t:,} | {w['cross']:,} | {pct(w['cross'], t)} | {w['cross_from_coordinator']:,} |"
		          f" {w['cross_from_others']:,} | {pct(w['cross_from_others'], t)} |")
		print(f"| whole run | {(at['end'] - t0) / 1e3:.0f} | {total:,} | {whole['cross']:,} | {pct(whole['cross'], total)} | {whole['cross_from_coordinator']:,} |"
		      f" {whole['cross_from_others']:,} | {pct(whole['cross_from_others'], total)} |")
		verify = json.load(open(os.path.join(d, "verify.json")))
		produced = n
		want = {str(p): len(range(p, produced, parts)) for p in range(parts)}
		got = verify["partitions"]
		once = verify["rows"] == produced and all(
		    got.get(p, {}).get("count") == c == got[p]["distinct"] and got[p]["min"] == 0 and got[p]["max"] == c - 1
		    for p, c in want.items() if c)
		print(f"\nkernel: {pct(whole['cross'], total)} of the {total:,} bytes the brokers sent into the zones crossed zones;"
		      f" {whole['cross_from_coordinator']:,} of them from the group coordinator's broker, {whole['cross_from_others']:,} from the others")
		print(f"logstore: {ls_cross:,} of {ls_same + ls_cross:,} fetched bytes ({pct(ls_cross, ls_same + ls_cross)}) from another zone's broker")
		print(f"pyarrow: {verify['rows']:,} rows of {produced:,}; every record exactly once: {'yes' if once else 'NO'}")
		result = {"protocol": protocol, "records": n, "partitions": parts, "rf": rf, "topic": topic, "coordinator": coord,
		          "kernel": kernel, "kernel_same": whole["same"], "kernel_cross": whole["cross"],
		          "kernel_cross_share": whole["cross"] / total if total else 0,
		          "kernel_cross_from_coordinator": whole["cross_from_coordinator"], "kernel_cross_from_others": whole["cross_from_others"],
		          "windows": rows, "members": members, "logstore_same": ls_same, "logstore_cross": ls_cross,
		          "events": {k: (v - t0) / 1e3 for k, v in at.items()}, "exactly_once": once, "verify": verify}
		with open(os.path.join(d, "result.json"), "w") as f:
		    json.dump(result, f, indent=1)
	PY
}
