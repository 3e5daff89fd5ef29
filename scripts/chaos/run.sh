#!/usr/bin/env bash
# The chaos suite's long run, by hand, against the local three-rack cluster
# and S3 server (scripts/kafka-cluster.sh start; scripts/s3-server.sh start):
# three members writing to S3 through a proxy that answers 503 at will, and a
# seeded plan of faults: members SIGKILLed at random moments and restarted, a
# fourth member joining and leaving, a broker stopped and started, S3 down
# and S3 flaky, the offsets of half the partitions deleted, the group deleted
# with its offsets; malformed records and a poison record. pyarrow then
# checks every good record once in the bucket and every bad one once in
# _errors/. The reduced run is TestChaos in the integration tests.
#   scripts/chaos/run.sh                 # 1,000,000 records, 30 faults, ~8 min
#   CHAOS_RECORDS=200000 CHAOS_EVENTS=12 CHAOS_SEED=7 scripts/chaos/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export CHAOS_RECORDS="${CHAOS_RECORDS:-1000000}" CHAOS_EVENTS="${CHAOS_EVENTS:-30}" CHAOS_RATE="${CHAOS_RATE:-1000}"
exec go test -count=1 -tags integration -timeout 60m -v -run '^TestChaos$' ./cmd/logstore
