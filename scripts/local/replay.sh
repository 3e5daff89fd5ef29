#!/usr/bin/env bash
# Replay captured logs locally: start the stack, load a capture with
# `logstore replay`, run the job as three members (one per zone) with
# `--until now`, and show what each read from its own zone.
#
#   scripts/local/replay.sh [CAPTURE.jsonl]     (default: scripts/local/sample.jsonl)
#
# A capture is one JSON record a line: {"key", "value", "timestamp",
# "headers", "partition"}; the records keep their partitions and times.
#
# Knobs (environment):
#   LOCAL_STACK   compose (default): scripts/local/compose.yaml with Docker:
#                 Redpanda in racks az-a/az-b/az-c, S3, an IMDS mock per zone;
#                 members find their zone through IMDSv2, output to S3.
#                 none: brokers already running on LOCAL_BROKERS (e.g.
#                 scripts/kafka-cluster.sh start); members get their zone
#                 from LOGSTORE_RACK, output to a folder.
#   LOCAL_BROKERS brokers (127.0.0.1:19092,127.0.0.1:29092,127.0.0.1:39092)
#   LOCAL_OUTPUT  with none: the output folder ($LOGSTORE_STATE/local/out)
#   LOCAL_DOWN=1  stop the compose stack at the end
set -euo pipefail

LOGSTORE_TOOL=replay
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

HERE="$LOGSTORE_ROOT/scripts/local"
CAPTURE="${1:-$HERE/sample.jsonl}"
LOCAL_STACK="${LOCAL_STACK:-compose}"
LOCAL_STATE="$LOGSTORE_STATE/local"
export LOCAL_STATE
export LOCAL_BROKERS="${LOCAL_BROKERS:-127.0.0.1:19092,127.0.0.1:29092,127.0.0.1:39092}"
CONFIG="$HERE/logstore.yaml"
ZONES=(az-a az-b az-c)

[[ -r $CAPTURE ]] || die "no capture at $CAPTURE"
need go
mkdir -p "$LOCAL_STATE"

compose() { docker compose -f "$HERE/compose.yaml" "$@"; }

case $LOCAL_STACK in
compose)
	need docker
	mkdir -p "$LOCAL_STATE/s3/logstore" # the posix backend: bucket logstore is a folder
	compose up -d --wait redpanda-a redpanda-b redpanda-c s3 imds-az-a imds-az-b imds-az-c
	compose run --rm redpanda-init
	export AWS_ACCESS_KEY_ID=logstore AWS_SECRET_ACCESS_KEY=logstore-secret AWS_REGION=us-east-1
	export AWS_ENDPOINT_URL_S3=http://127.0.0.1:7171
	OUTPUT=s3://logstore/replay
	;;
none)
	for t in logs logs-dlq; do
		"$LOGSTORE_ROOT/scripts/kafka-cluster.sh" tool org.apache.kafka.tools.TopicCommand \
			--bootstrap-server "${LOCAL_BROKERS%%,*}" --create --if-not-exists --topic "$t" \
			--partitions 12 --replication-factor 3 >/dev/null
	done
	OUTPUT="${LOCAL_OUTPUT:-$LOCAL_STATE/out}"
	;;
*) die "LOCAL_STACK=$LOCAL_STACK: use compose or none" ;;
esac
export LOGSTORE_OUTPUT="$OUTPUT"

BIN="$LOCAL_STATE/logstore"
(cd "$LOGSTORE_ROOT" && go build -o "$BIN" ./cmd/logstore)
"$BIN" check -c "$CONFIG" >/dev/null

t0=$(now_ms)
"$BIN" replay -c "$CONFIG" --input "$CAPTURE"
say "capture produced in $(elapsed_s "$t0") s"

# One member per zone, all in the group logstore-replay; each reads to the
# end offsets it saw at start, commits and exits.
pids=()
for i in "${!ZONES[@]}"; do
	zone=${ZONES[$i]}
	(
		export LOGSTORE_METRICS="127.0.0.1:$((9471 + i))"
		if [[ $LOCAL_STACK == compose ]]; then
			export AWS_EC2_METADATA_SERVICE_ENDPOINT="http://127.0.0.1:$((18091 + i))"
			unset LOGSTORE_RACK
		else
			export LOGSTORE_RACK=$zone
		fi
		exec "$BIN" run -c "$CONFIG" --until now >"$LOCAL_STATE/member-$zone.out" 2>"$LOCAL_STATE/member-$zone.log"
	) &
	pids+=($!)
done
failed=0
for i in "${!pids[@]}"; do
	if ! wait "${pids[$i]}"; then
		warn "member ${ZONES[$i]} failed; its log: $LOCAL_STATE/member-${ZONES[$i]}.log"
		failed=1
	fi
done
for zone in "${ZONES[@]}"; do
	say "member $zone:"
	sed 's/^/    /' "$LOCAL_STATE/member-$zone.out"
done
say "all members done in $(elapsed_s "$t0") s; output in $OUTPUT"
[[ ${LOCAL_DOWN:-0} == 1 && $LOCAL_STACK == compose ]] && compose down
exit "$failed"
