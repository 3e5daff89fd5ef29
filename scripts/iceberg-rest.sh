#!/usr/bin/env bash
# An Iceberg REST catalog on this machine, for the table sink's REST tests
# and for reading a table the way Trino or Spark would through one: Apache
# Iceberg's own REST catalog test server (org.apache.iceberg.rest.
# RESTCatalogServer, from iceberg-open-api's test-fixtures jar on Maven
# Central), backed by a JDBC catalog on a SQLite file, writing table
# metadata with S3FileIO to the local S3 server (scripts/s3-server.sh).
#
#   scripts/iceberg-rest.sh start | stop | status | clean
#   scripts/iceberg-rest.sh install      (resolve the jars with Maven, once)
#   scripts/iceberg-rest.sh uri          (prints http://127.0.0.1:PORT)
#
# Knobs (environment):
#   ICEBERG_REST_WAREHOUSE  where new tables go (required for start):
#                           s3://BUCKET/PREFIX on the S3 server; the bucket
#                           must exist
#   ICEBERG_REST_PORT       listen port (8181). The fixture listens on every
#                           interface (it takes a port, not an address);
#                           clients use 127.0.0.1.
#   ICEBERG_VERSION         org.apache.iceberg version (1.11.0, the newest
#                           whose test-fixtures jar Maven Central serves here)
#   LOGSTORE_STATE          state root (<repo>/.state); ours is
#                           $LOGSTORE_STATE/iceberg-rest (catalog.db, log, pid)
#   ICEBERG_REST_STATE      that folder instead: a second server beside the
#                           first (with its own ICEBERG_REST_PORT)
#   LOGSTORE_CACHE          cache root (~/.cache/logstore); the classpath in
#                           iceberg-rest-<version>/classpath, jars in ~/.m2
#
# The catalog keeps its tables across restarts (catalog.db); `clean` drops
# them. The table data stays in the bucket either way.
set -euo pipefail

LOGSTORE_TOOL=iceberg-rest
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ICEBERG_VERSION="${ICEBERG_VERSION:-1.11.0}"
ICEBERG_REST_PORT="${ICEBERG_REST_PORT:-8181}"
REST_CACHE="$LOGSTORE_CACHE/iceberg-rest-$ICEBERG_VERSION"
REST_STATE="${ICEBERG_REST_STATE:-$LOGSTORE_STATE/iceberg-rest}"
REST_PID="$REST_STATE/pid"
REST_LOG="$REST_STATE/server.log"
REST_DB="$REST_STATE/catalog.db"
# The catalog file is on the JVM's command line (a system property) and on
# no other process's.
REST_MARKER="-Dlogstore.iceberg-rest=$REST_DB"
JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"

running_port() { cat "$REST_STATE/port" 2>/dev/null || echo "$ICEBERG_REST_PORT"; }
uri() { echo "http://127.0.0.1:$(running_port)"; }

# install resolves the server's runtime classpath once per version; later
# runs (and other clones on this machine) reuse it.
install() {
	[[ -s $REST_CACHE/classpath ]] && return
	need mvn "$JAVA"
	say "resolving Iceberg $ICEBERG_VERSION's REST catalog test server with Maven (once)"
	mkdir -p "$REST_CACHE"
	local log="$REST_CACHE/mvn.log"
	if ! mvn -q -B -f "$LOGSTORE_ROOT/scripts/iceberg-rest/pom.xml" \
		dependency:build-classpath \
		-Diceberg.version="$ICEBERG_VERSION" \
		-Dmdep.outputFile="$REST_CACHE/classpath.new" >"$log" 2>&1; then
		tail_logs "$log"
		die "Maven could not resolve org.apache.iceberg:iceberg-open-api:$ICEBERG_VERSION:test-fixtures and its runtime"
	fi
	mv "$REST_CACHE/classpath.new" "$REST_CACHE/classpath"
}

cmd_start() {
	local t0
	[[ ${ICEBERG_REST_WAREHOUSE:-} == s3://* ]] ||
		die "set ICEBERG_REST_WAREHOUSE to s3://BUCKET/PREFIX on the S3 server (the bucket must exist)"
	if pid_alive "$REST_PID" "$REST_MARKER"; then
		local was
		was=$(cat "$REST_STATE/warehouse" 2>/dev/null || true)
		# New tables would go to the running server's warehouse, not this one.
		[[ $was == "$ICEBERG_REST_WAREHOUSE" ]] ||
			die "already running on $(uri) with warehouse $was; stop it first (scripts/iceberg-rest.sh stop)"
		say "already running on $(uri)"
		return 0
	fi
	port_open "$ICEBERG_REST_PORT" && die "port $ICEBERG_REST_PORT is taken by another process; set ICEBERG_REST_PORT"
	install
	# The S3 server's endpoint and credentials, for the server's S3FileIO.
	eval "$(bash "$LOGSTORE_ROOT/scripts/s3-server.sh" env)"
	mkdir -p "$REST_STATE"
	echo "$ICEBERG_REST_PORT" >"$REST_STATE/port"
	echo "$ICEBERG_REST_WAREHOUSE" >"$REST_STATE/warehouse"
	t0=$(now_ms)
	# The fixture reads its catalog's properties from CATALOG_* variables
	# (CATALOG_A_B__C is a.b-c). env -i: nothing else of the caller's
	# reaches it. A short-lived test server: C1 only, a small heap.
	spawn "$REST_PID" "$REST_LOG" env -i PATH="$PATH" HOME="$HOME" \
		CATALOG_REST_PORT="$ICEBERG_REST_PORT" \
		CATALOG_URI="jdbc:sqlite:file:$REST_DB" \
		CATALOG_WAREHOUSE="$ICEBERG_REST_WAREHOUSE" \
		CATALOG_IO__IMPL=org.apache.iceberg.aws.s3.S3FileIO \
		CATALOG_S3_ENDPOINT="$AWS_ENDPOINT_URL_S3" \
		CATALOG_S3_PATH__STYLE__ACCESS=true \
		CATALOG_S3_ACCESS__KEY__ID="$AWS_ACCESS_KEY_ID" \
		CATALOG_S3_SECRET__ACCESS__KEY="$AWS_SECRET_ACCESS_KEY" \
		CATALOG_CLIENT_REGION="$AWS_REGION" \
		CATALOG_HTTP__CLIENT_TYPE=urlconnection \
		"$JAVA" -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 "$REST_MARKER" \
		-cp "$(<"$REST_CACHE/classpath")" org.apache.iceberg.rest.RESTCatalogServer || exit 1
	if ! wait_for_port "$ICEBERG_REST_PORT" 60 "$REST_PID"; then
		tail_logs "$REST_LOG"
		stop_pidfile "$REST_PID" 5 "$REST_MARKER"
		die "the REST catalog did not come up on port $ICEBERG_REST_PORT"
	fi
	say "ready in $(elapsed_s "$t0") s on $(uri) (warehouse $ICEBERG_REST_WAREHOUSE)"
}

cmd_stop() {
	local was=0 pid
	pid_alive "$REST_PID" "$REST_MARKER" && was=1
	stop_pidfile "$REST_PID" 10 "$REST_MARKER"
	for pid in $(pids_matching "$REST_MARKER"); do
		warn "stopping stray REST catalog $pid"
		stop_pid "$pid" 10
		was=1
	done
	rm -f "$REST_STATE/port" "$REST_STATE/warehouse"
	if ((was)); then say "stopped"; else say "not running"; fi
}

cmd_status() {
	if pid_alive "$REST_PID" "$REST_MARKER"; then
		say "up   pid $(<"$REST_PID") $(uri)"
	else
		say "down"
		exit 3
	fi
}

cmd_clean() {
	cmd_stop
	rm -rf "$REST_STATE"
	say "removed $REST_STATE"
}

case ${1:-} in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
clean) cmd_clean ;;
install) install ;;
uri) uri ;;
*) usage ;;
esac
