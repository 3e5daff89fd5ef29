#!/usr/bin/env bash
# A three-node Apache Kafka 4 KRaft cluster on 127.0.0.1 for logstore's
# integration tests: one rack (AZ) per broker and the rack-aware replica
# selector on, so fetch-from-follower (KIP-392) really happens.
#
#   scripts/kafka-cluster.sh start | stop | status | clean
#   scripts/kafka-cluster.sh stop-node N | start-node N      (N = 1, 2, 3)
#   scripts/kafka-cluster.sh bootstrap [plaintext|ssl|sasl_ssl]  (prints brokers)
#   scripts/kafka-cluster.sh tls-dir                         (CA and client cert)
#   scripts/kafka-cluster.sh tool CLASS ARGS...              (kafka CLI class)
#
#   node  client (PLAINTEXT) controller       mTLS (SSL)       SCRAM (SASL_SSL)  rack
#   1     127.0.0.1:19092    127.0.0.1:19093  127.0.0.1:19094  127.0.0.1:19095   az-a
#   2     127.0.0.1:29092    127.0.0.1:29093  127.0.0.1:29094  127.0.0.1:29095   az-b
#   3     127.0.0.1:39092    127.0.0.1:39093  127.0.0.1:39094  127.0.0.1:39095   az-c
#
# Security listeners, for the TLS and SASL tests (the PLAINTEXT one is what
# every other test uses, and what the brokers speak among themselves):
#   SSL       TLS that requires a client certificate signed by the test CA.
#   SASL_SSL  TLS (no client certificate) + SASL SCRAM-SHA-512, user
#             "logstore", password "logstore-test-secret" (test-only
#             credentials, created when the node is formatted). A session
#             must re-authenticate every 5 s (connections.max.reauth.ms,
#             KIP-368), so clients that never do are cut off quickly.
# The test CA, the broker certificate (SAN 127.0.0.1 and localhost) and a
# client certificate, all PEM, are made once with openssl into the state
# dir's tls/ folder (`tls-dir` prints it): ca.crt, client.crt, client.key.
#
# Each node is a combined broker+controller; the quorum is static
# (controller.quorum.voters), so every node is formatted the same way and no
# node is special. Topics are never auto-created: a test that needs a topic
# creates it (RF 3 and 1 partition unless it says otherwise), so a typo in a
# topic name fails loudly instead of creating a stray topic.
#
# Knobs (environment):
#   KAFKA_VERSION        org.apache.kafka version from Maven Central (4.4.0)
#   KAFKA_CLUSTER_ID     cluster id used when formatting (fixed by default)
#   KAFKA_READY_TIMEOUT  seconds "start" waits for 3 registered brokers (120)
#   KAFKA_HEAP_OPTS      broker heap (-Xms256m -Xmx512m)
#   KAFKA_JVM_OPTS       other broker JVM flags
#   KAFKA_STOP_TIMEOUT   seconds from SIGTERM to SIGKILL (30)
#   KAFKA_PORT_OFFSET    added to every port (0), to run a second cluster
#                        beside the usual one with its own LOGSTORE_STATE
#   KAFKA_HOST_N         node N's listener address (127.0.0.1), N = 1, 2, 3
#   KAFKA_EXEC_N         command prefix node N's JVM runs under (none), e.g.
#                        "ip netns exec zl-az-a" (scripts/zonelab.sh)
#   KAFKA_REPLICATION_LISTENER  1: brokers replicate over a listener of their
#                        own, REPLICATION, on the client port + 4, so the
#                        client port carries client traffic only (0)
#   KAFKA_GROUP_REBALANCE_DELAY_MS  group.initial.rebalance.delay.ms (0; Kafka's
#                        own default is 3000)
#   LOGSTORE_STATE       state root (<repo>/.state); ours is $LOGSTORE_STATE/kafka
#   LOGSTORE_CACHE       cache root (~/.cache/logstore); jars in kafka-<version>/libs
set -euo pipefail

LOGSTORE_TOOL=kafka-cluster
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KAFKA_VERSION="${KAFKA_VERSION:-4.4.0}"
KAFKA_LIBS="$LOGSTORE_CACHE/kafka-$KAFKA_VERSION/libs"
KAFKA_STATE="$LOGSTORE_STATE/kafka"
# Base64 of the 16 bytes "logstore-test-cl": a valid, recognisable id, so a
# data dir formatted by another cluster is caught by the broker at start.
KAFKA_CLUSTER_ID="${KAFKA_CLUSTER_ID:-bG9nc3RvcmUtdGVzdC1jbA}"
KAFKA_READY_TIMEOUT="${KAFKA_READY_TIMEOUT:-120}"
# Three JVMs share two cores: small heaps, the serial collector (no GC
# threads fighting the brokers) and no JIT tuning beyond that.
KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
KAFKA_JVM_OPTS="${KAFKA_JVM_OPTS:--XX:+UseSerialGC -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true}"
# SIGTERM does a controlled shutdown (leaders move away first); give it time.
KAFKA_STOP_TIMEOUT="${KAFKA_STOP_TIMEOUT:-30}"

NODES=(1 2 3)
JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"

KAFKA_PORT_OFFSET="${KAFKA_PORT_OFFSET:-0}"
client_port() { echo $(($1 * 10000 + 9092 + KAFKA_PORT_OFFSET)); }
controller_port() { echo $(($1 * 10000 + 9093 + KAFKA_PORT_OFFSET)); }
ssl_port() { echo $(($1 * 10000 + 9094 + KAFKA_PORT_OFFSET)); }
sasl_ssl_port() { echo $(($1 * 10000 + 9095 + KAFKA_PORT_OFFSET)); }
TLS_DIR="$KAFKA_STATE/tls"
# Test-only SCRAM credentials of the SASL_SSL listener (see the header).
SCRAM_USER=logstore
SCRAM_PASSWORD=logstore-test-secret
# What formatting writes into a node's metadata besides the cluster id. A
# data dir formatted with another stamp (an older version of this script,
# before the SCRAM users) is formatted again: it is test data.
FORMAT_STAMP="v2 cluster=$KAFKA_CLUSTER_ID scram=SCRAM-SHA-512:$SCRAM_USER:$SCRAM_PASSWORD"
host_of() {
	local v="KAFKA_HOST_$1"
	echo "${!v:-127.0.0.1}"
}
exec_of() {
	local v="KAFKA_EXEC_$1"
	echo "${!v:-}"
}
KAFKA_REPLICATION_LISTENER="${KAFKA_REPLICATION_LISTENER:-0}"
KAFKA_GROUP_REBALANCE_DELAY_MS="${KAFKA_GROUP_REBALANCE_DELAY_MS:-0}"
rack_of() {
	local racks=(az-a az-b az-c)
	echo "${racks[$1 - 1]}"
}
node_dir() { echo "$KAFKA_STATE/node-$1"; }
pidfile_of() { echo "$(node_dir "$1")/pid"; }
# What a node's java command line contains, and nothing else's does.
marker_of() { echo "kafka.Kafka $(node_dir "$1")/server.properties"; }
# bootstrap_servers [plaintext|ssl|sasl_ssl]
bootstrap_servers() {
	local n out=() port=client_port
	case ${1:-plaintext} in
	plaintext) ;;
	ssl) port=ssl_port ;;
	sasl_ssl) port=sasl_ssl_port ;;
	*) die "bootstrap: listener must be plaintext, ssl or sasl_ssl, not '$1'" ;;
	esac
	for n in "${NODES[@]}"; do out+=("$(host_of "$n"):$($port "$n")"); done
	(
		IFS=,
		echo "${out[*]}"
	)
}
quorum_voters() {
	local n out=()
	for n in "${NODES[@]}"; do out+=("$n@$(host_of "$n"):$(controller_port "$n")"); done
	(
		IFS=,
		echo "${out[*]}"
	)
}
node_up() { pid_alive "$(pidfile_of "$1")" "$(marker_of "$1")"; }

check_node() {
	[[ $1 =~ ^[123]$ ]] || die "node must be 1, 2 or 3, not '$1'"
}

# ensure_libs resolves the Kafka jars once per version with Maven; later runs
# (and other clones on this machine) reuse the cache.
ensure_libs() {
	if [[ -f $KAFKA_LIBS/.complete ]]; then
		return
	fi
	need mvn "$JAVA"
	say "resolving Kafka $KAFKA_VERSION jars with Maven into $KAFKA_LIBS (once)"
	rm -rf "$KAFKA_LIBS"
	mkdir -p "$KAFKA_LIBS"
	# Maven's output goes to a log shown only on failure (even -q -B prints
	# terminal escapes).
	local log="$LOGSTORE_CACHE/kafka-$KAFKA_VERSION/mvn.log"
	if ! mvn -q -B -f "$LOGSTORE_ROOT/scripts/kafka/pom.xml" \
		dependency:copy-dependencies \
		-Dkafka.version="$KAFKA_VERSION" \
		-DoutputDirectory="$KAFKA_LIBS" \
		-DincludeScope=runtime >"$log" 2>&1; then
		tail_logs "$log"
		die "Maven could not resolve org.apache.kafka:kafka_2.13:$KAFKA_VERSION"
	fi
	touch "$KAFKA_LIBS/.complete"
}

# tool CLASS ARGS...: runs a Kafka command-line class (TopicCommand,
# BrokerApiVersionsCommand, MetadataQuorumCommand, StorageTool, ...) with
# the cluster's jars. Its own log lines go to stderr at WARN.
run_tool() {
	local class=$1
	shift
	ensure_libs
	write_tools_log4j
	# A short-lived JVM: C1 only and a small heap start noticeably faster.
	"$JAVA" -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
		-Dlog4j2.configurationFile="$KAFKA_STATE/tools-log4j2.properties" \
		-cp "$KAFKA_LIBS/*" "$class" "$@"
}

write_tools_log4j() {
	mkdir -p "$KAFKA_STATE"
	cat >"$KAFKA_STATE/tools-log4j2.properties" <<-'EOF'
		status = warn
		appender.err.type = Console
		appender.err.name = err
		appender.err.target = SYSTEM_ERR
		appender.err.layout.type = PatternLayout
		appender.err.layout.pattern = [%d] %p %m (%c)%n
		rootLogger.level = WARN
		rootLogger.appenderRef.err.ref = err
	EOF
}

# Brokers log to logs/server.log in their node dir, rolled at 50 MB. The
# request and state-change loggers are as chatty as Kafka's own defaults
# allow, i.e. WARN.
write_broker_log4j() {
	cat >"$KAFKA_STATE/log4j2.properties" <<-'EOF'
		status = warn
		appender.file.type = RollingFile
		appender.file.name = file
		appender.file.fileName = ${sys:kafka.logs.dir}/server.log
		appender.file.filePattern = ${sys:kafka.logs.dir}/server.log.%i
		appender.file.layout.type = PatternLayout
		appender.file.layout.pattern = [%d] %p %m (%c)%n
		appender.file.policies.type = Policies
		appender.file.policies.size.type = SizeBasedTriggeringPolicy
		appender.file.policies.size.size = 50MB
		appender.file.strategy.type = DefaultRolloverStrategy
		appender.file.strategy.max = 2
		rootLogger.level = INFO
		rootLogger.appenderRef.file.ref = file
		logger.request.name = kafka.request.logger
		logger.request.level = WARN
		logger.statechange.name = state.change.logger
		logger.statechange.level = WARN
		logger.zookeeper.name = org.apache.zookeeper
		logger.zookeeper.level = WARN
	EOF
}

# ensure_tls makes the test CA, the brokers' certificate and key (one PEM
# keystore for all nodes: they share 127.0.0.1) and a client certificate,
# once. RSA keys in unencrypted PKCS#8, which both Kafka's PEM keystore and
# Go's crypto/tls read.
ensure_tls() {
	[[ -f $TLS_DIR/.complete ]] && return 0
	need openssl
	say "making a test CA and certificates in $TLS_DIR (once)"
	rm -rf "$TLS_DIR"
	mkdir -p "$TLS_DIR"
	(
		cd "$TLS_DIR"
		set -e
		openssl genpkey -quiet -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out ca.key
		openssl req -x509 -new -key ca.key -sha256 -days 3650 -subj "/CN=logstore test CA" \
			-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
			-out ca.crt
		local name ext
		for name in broker client; do
			if [[ $name == broker ]]; then
				ext="subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth
keyUsage=critical,digitalSignature,keyEncipherment"
			else
				ext="extendedKeyUsage=clientAuth
keyUsage=critical,digitalSignature,keyEncipherment"
			fi
			openssl genpkey -quiet -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$name.key"
			openssl req -new -key "$name.key" -subj "/CN=logstore-test-$name" -out "$name.csr"
			openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -sha256 -days 3650 \
				-extfile <(printf '%s\n' "$ext") -out "$name.crt" 2>/dev/null
			rm -f "$name.csr"
		done
		# Kafka's PEM keystore: the private key, then the certificate chain.
		cat broker.key broker.crt ca.crt >broker-keystore.pem
		chmod 600 ./*.key broker-keystore.pem
	) >"$KAFKA_STATE/tls.log" 2>&1 || {
		tail_logs "$KAFKA_STATE/tls.log"
		die "could not make the test certificates"
	}
	touch "$TLS_DIR/.complete"
}

# write_config N: server.properties for node N, rewritten on every start so
# edits to this script take effect without wiping data.
write_config() {
	local n=$1 dir port cport host
	dir=$(node_dir "$n")
	port=$(client_port "$n")
	cport=$(controller_port "$n")
	host=$(host_of "$n")
	local tls="SSL://$host:$(ssl_port "$n"),SASL_SSL://$host:$(sasl_ssl_port "$n")"
	local listeners="PLAINTEXT://$host:$port,CONTROLLER://$host:$cport,$tls"
	local advertised="PLAINTEXT://$host:$port,$tls"
	local protocols="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL" inter=PLAINTEXT
	if [[ $KAFKA_REPLICATION_LISTENER == 1 ]]; then
		listeners+=",REPLICATION://$host:$((port + 4))"
		advertised+=",REPLICATION://$host:$((port + 4))"
		protocols+=",REPLICATION:PLAINTEXT"
		inter=REPLICATION
	fi
	mkdir -p "$dir/data" "$dir/logs"
	cat >"$dir/server.properties" <<-EOF
		# Written by scripts/kafka-cluster.sh; edits here are overwritten.
		process.roles=broker,controller
		node.id=$n
		controller.quorum.voters=$(quorum_voters)
		listeners=$listeners
		advertised.listeners=$advertised
		listener.security.protocol.map=$protocols
		controller.listener.names=CONTROLLER
		inter.broker.listener.name=$inter
		log.dirs=$dir/data

		# TLS for the SSL and SASL_SSL listeners: PEM keystore and truststore
		# from ensure_tls. The SSL listener requires a client certificate
		# (mutual TLS); the SASL_SSL one authenticates with SCRAM instead.
		ssl.keystore.type=PEM
		ssl.keystore.location=$TLS_DIR/broker-keystore.pem
		ssl.truststore.type=PEM
		ssl.truststore.location=$TLS_DIR/ca.crt
		listener.name.ssl.ssl.client.auth=required
		listener.name.sasl_ssl.ssl.client.auth=none
		sasl.enabled.mechanisms=SCRAM-SHA-512
		listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512
		listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
		# Sessions expire after 5 s and must re-authenticate in place
		# (KIP-368), as MSK IAM sessions do after their credentials' lifetime.
		listener.name.sasl_ssl.connections.max.reauth.ms=5000

		# Racks: one per broker, and followers serve fetches from clients that
		# name their rack (KIP-392), which is what logstore is about.
		broker.rack=$(rack_of "$n")
		replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector

		# Topics: explicit creation only; RF 3 and 1 partition when not given.
		auto.create.topics.enable=false
		num.partitions=1
		default.replication.factor=3
		min.insync.replicas=1
		# No time retention: the tests stamp their logs at fixed dates (so
		# paths and partition values are the same every run), and a broker
		# keeping 7 days (the default) deletes a log older than that at its
		# next retention check, every 5 minutes: records then vanish in the
		# middle of a test, at random (CI met it a week after the date).
		log.retention.ms=-1
		offsets.topic.replication.factor=3
		transaction.state.log.replication.factor=3
		transaction.state.log.min.isr=2
		# 50 partitions per internal topic (the default) make the first group
		# join or transaction create 150 replicas; 10 is plenty for tests.
		offsets.topic.num.partitions=10
		transaction.state.log.num.partitions=10
		share.coordinator.state.topic.num.partitions=10

		# Fast tests: no wait for more members before the first rebalance, and
		# a dead follower leaves the ISR after 10 s instead of 30 s.
		group.initial.rebalance.delay.ms=$KAFKA_GROUP_REBALANCE_DELAY_MS
		# A consumer-protocol group may set a session and heartbeat shorter
		# than 45 s and 5 s (consumer.session.timeout.ms on the group), so a
		# test of a member slower than its session takes seconds. Read-only
		# on the brokers: a running cluster keeps its bounds until restarted.
		group.consumer.min.session.timeout.ms=1000
		group.consumer.min.heartbeat.interval.ms=100
		replica.lag.time.max.ms=10000

		# Two cores for three nodes: few threads, small cleaner buffer.
		num.network.threads=2
		num.io.threads=2
		background.threads=2
		num.replica.fetchers=1
		num.recovery.threads.per.data.dir=1
		log.cleaner.threads=1
		log.cleaner.dedupe.buffer.size=16777216
	EOF
}

# format_node N: formats node N's data dir once. Every node gets the same
# cluster id, static voter set and SCRAM users; --standalone would start a
# dynamic single-voter quorum instead, which is not what we want. A dir
# formatted with another FORMAT_STAMP is wiped and formatted again.
format_node() {
	local n=$1 dir
	dir=$(node_dir "$n")
	if [[ -f $dir/data/meta.properties ]]; then
		[[ -f $dir/format.stamp && $(<"$dir/format.stamp") == "$FORMAT_STAMP" ]] && return 0
		warn "node $n: data dir formatted by an older version of this script; formatting it again (test data is lost)"
		rm -rf "$dir/data"
		mkdir -p "$dir/data"
	fi
	run_tool kafka.tools.StorageTool format \
		-t "$KAFKA_CLUSTER_ID" -c "$dir/server.properties" \
		--add-scram "SCRAM-SHA-512=[name=$SCRAM_USER,password=$SCRAM_PASSWORD]" \
		>"$dir/logs/format.log" 2>&1 || {
		tail_logs "$dir/logs/format.log"
		return 1
	}
	echo "$FORMAT_STAMP" >"$dir/format.stamp"
}

launch_node() {
	local n=$1 dir
	dir=$(node_dir "$n")
	local -a heap jvm prefix
	read -r -a heap <<<"$KAFKA_HEAP_OPTS"
	read -r -a jvm <<<"$KAFKA_JVM_OPTS"
	read -r -a prefix <<<"$(exec_of "$n")"
	# One run per log file, so failure reports show this run only.
	if [[ -f $dir/logs/server.log ]]; then
		mv -f "$dir/logs/server.log" "$dir/logs/server.log.prev"
	fi
	spawn "$(pidfile_of "$n")" "$dir/logs/stdout.log" \
		"${prefix[@]}" "$JAVA" "${heap[@]}" "${jvm[@]}" \
		-Dkafka.logs.dir="$dir/logs" \
		-Dlog4j2.configurationFile="$KAFKA_STATE/log4j2.properties" \
		-cp "$KAFKA_LIBS/*" kafka.Kafka "$dir/server.properties"
}

# start_nodes N...: writes config, formats (in parallel: each format is a
# JVM start) and launches the given nodes.
start_nodes() {
	local n pids=() failed=0
	ensure_libs
	ensure_tls
	write_tools_log4j
	write_broker_log4j
	for n in "$@"; do
		write_config "$n"
		format_node "$n" &
		pids+=($!)
	done
	for n in "${pids[@]}"; do wait "$n" || failed=1; done
	((failed == 0)) || die "formatting failed (see above)"
	for n in "$@"; do launch_node "$n"; done
}

# registered_brokers prints "id rack" for each broker that is registered,
# unfenced (Kafka 4 lists fenced brokers too, marked "isFenced: true") and
# answers ApiVersions itself ("-> (" rather than "-> ERROR"). That proves a
# usable broker, not just an open port.
registered_brokers() {
	run_tool org.apache.kafka.tools.BrokerApiVersionsCommand \
		--bootstrap-server "$(bootstrap_servers)" 2>/dev/null |
		grep -v "isFenced: true" |
		sed -nE 's/^[^ ]+ \(id: ([0-9]+) rack: ([^ )]+).*\) -> \($/\1 \2/p' |
		sort -u
}

# wait_registered TIMEOUT N...: waits until every given node is registered.
wait_registered() {
	local timeout=$1 deadline n got
	shift
	deadline=$((SECONDS + timeout))
	# Ports first: cheap, and it catches a crashed JVM within a second.
	for n in "$@"; do
		wait_for_port "$(client_port "$n")" $((deadline - SECONDS)) "$(pidfile_of "$n")" "$(host_of "$n")" || return 1
	done
	while ((SECONDS < deadline)); do
		got=$(registered_brokers || true)
		local missing=0
		for n in "$@"; do
			grep -qx "$n $(rack_of "$n")" <<<"$got" || missing=1
		done
		((missing == 0)) && return 0
		for n in "$@"; do node_up "$n" || return 1; done
		sleep 0.5
	done
	return 1
}

fail_start() {
	local n dir files=()
	warn "$1"
	for n in "${NODES[@]}"; do
		dir=$(node_dir "$n")
		files+=("$dir/logs/stdout.log" "$dir/logs/server.log")
	done
	tail_logs "${files[@]}"
	# The tail of a crashed node is mostly stack frames; name the cause.
	for n in "${NODES[@]}"; do
		node_up "$n" && continue
		warn "node $n is not running; its last errors:"
		grep -hE '^\[[^]]*\] (ERROR|FATAL)|Error|Exception' \
			"$(node_dir "$n")"/logs/{stdout,server}.log 2>/dev/null |
			tail -n 3 | cut -c1-400 >&2 || true
	done
	for n in "${NODES[@]}"; do
		if node_up "$n"; then
			warn "nodes still running are left up for inspection; '$0 stop' ends them"
			break
		fi
	done
	exit 1
}

# check_ports_free N...: a port held by something else would let a node
# crash at bind, or worse, make a foreign listener look like our broker.
# reserve_ports N...: keeps the kernel from handing the nodes' listener ports
# (client port to client port + 4) out as the local port of an outgoing
# connection. 39092-39096 lie in Linux's ephemeral range (32768-60999): a
# controller connecting to another node can take 39094 a moment before node 3
# binds it ("Address already in use"). Needs root; without it, says so once.
reserve_ports() {
	local f=/proc/sys/net/ipv4/ip_local_reserved_ports n ranges=() cur
	for n in "$@"; do ranges+=("$(client_port "$n")-$(($(client_port "$n") + 4))"); done
	[[ -r $f ]] || return 0
	cur=$(<"$f")
	local missing=() r
	for r in "${ranges[@]}"; do [[ ,$cur, == *,$r,* ]] || missing+=("$r"); done
	((${#missing[@]} > 0)) || return 0
	if [[ -w $f ]] && (IFS=,; echo "${cur:+$cur,}${missing[*]}" >"$f") 2>/dev/null; then
		return 0
	fi
	warn "could not reserve ports ${missing[*]} (not root?): a start may rarely fail with 'Address already in use'"
}

check_ports_free() {
	local n port
	reserve_ports "$@"
	for n in "$@"; do
		for port in $(client_port "$n") $(controller_port "$n") $(ssl_port "$n") $(sasl_ssl_port "$n"); do
			port_open "$port" "$(host_of "$n")" && die "$(host_of "$n"):$port (node $n) is taken by another process"
		done
	done
	return 0
}

cmd_start() {
	local n missing=() t0
	for n in "${NODES[@]}"; do node_up "$n" || missing+=("$n"); done
	if ((${#missing[@]} == 0)); then
		say "already running ($(bootstrap_servers))"
		return 0
	fi
	check_ports_free "${missing[@]}"
	ensure_libs
	t0=$(now_ms)
	say "starting node(s) ${missing[*]} (Kafka $KAFKA_VERSION, state $KAFKA_STATE)"
	start_nodes "${missing[@]}"
	wait_registered "$KAFKA_READY_TIMEOUT" "${NODES[@]}" ||
		fail_start "cluster not ready after $(elapsed_s "$t0") s (timeout ${KAFKA_READY_TIMEOUT} s)"
	say "ready in $(elapsed_s "$t0") s"
	say "bootstrap servers: $(bootstrap_servers)"
}

cmd_start_node() {
	local n=$1 t0
	check_node "$n"
	if node_up "$n"; then
		say "node $n already running"
		return 0
	fi
	check_ports_free "$n"
	ensure_libs
	t0=$(now_ms)
	start_nodes "$n"
	wait_registered "$KAFKA_READY_TIMEOUT" "$n" ||
		fail_start "node $n not back in the cluster after $(elapsed_s "$t0") s (timeout ${KAFKA_READY_TIMEOUT} s)"
	say "node $n ready in $(elapsed_s "$t0") s"
}

cmd_stop_node() {
	local n=$1
	check_node "$n"
	if ! node_up "$n"; then
		rm -f "$(pidfile_of "$n")"
		say "node $n not running"
		return 0
	fi
	stop_pidfile "$(pidfile_of "$n")" "$KAFKA_STOP_TIMEOUT" "$(marker_of "$n")"
	say "node $n stopped"
}

cmd_stop() {
	local n pid pids=() strays
	# SIGTERM all nodes at once: stopping them one by one makes the last
	# ones wait for a quorum that is already gone.
	for n in "${NODES[@]}"; do
		if node_up "$n"; then
			stop_pid "$(<"$(pidfile_of "$n")")" "$KAFKA_STOP_TIMEOUT" &
			pids+=($!)
		fi
	done
	for pid in "${pids[@]}"; do wait "$pid" || true; done
	for n in "${NODES[@]}"; do rm -f "$(pidfile_of "$n")"; done
	# A node whose pid file was lost (deleted state, crash of this script)
	# is still found by its command line.
	strays=$(for n in "${NODES[@]}"; do pids_matching "$(marker_of "$n")"; done)
	for pid in $strays; do
		warn "stopping stray Kafka process $pid"
		stop_pid "$pid" "$KAFKA_STOP_TIMEOUT"
	done
	if ((${#pids[@]} == 0)) && [[ -z $strays ]]; then
		say "not running"
	else
		say "stopped"
	fi
}

cmd_status() {
	local n up=0
	for n in "${NODES[@]}"; do
		if node_up "$n"; then
			up=$((up + 1))
			say "node $n up   pid $(<"$(pidfile_of "$n")") $(host_of "$n"):$(client_port "$n") rack $(rack_of "$n")"
		else
			say "node $n down           $(host_of "$n"):$(client_port "$n") rack $(rack_of "$n")"
		fi
	done
	((up == ${#NODES[@]})) || exit 3
}

cmd_clean() {
	cmd_stop
	rm -rf "$KAFKA_STATE"
	say "removed $KAFKA_STATE"
}

main() {
	local cmd=${1:-}
	(($# > 0)) && shift
	case $cmd in
	start) cmd_start ;;
	stop) cmd_stop ;;
	status) cmd_status ;;
	clean) cmd_clean ;;
	start-node) cmd_start_node "${1:?start-node needs N}" ;;
	stop-node) cmd_stop_node "${1:?stop-node needs N}" ;;
	bootstrap) bootstrap_servers "${1:-plaintext}" ;;
	tls-dir) echo "$TLS_DIR" ;;
	tool) run_tool "${1:?tool needs a class name}" "${@:2}" ;;
	*) usage ;;
	esac
}

main "$@"
