#!/usr/bin/env bash
# The chaos suite's long run, by hand, against the local three-rack cluster
# and S3 server (scripts/kafka-cluster.sh start; scripts/s3-server.sh start):
# three members SIGKILLed at random moments and restarted, the group deleted
# with its offsets half way, malformed records and a poison record; pyarrow
# then checks every good record once in the files and every bad one once in
# _errors/. The reduced run is TestChaos in the integration tests.
#   scripts/chaos/run.sh                 # 1,000,000 records, 18 kills
#   CHAOS_RECORDS=200000 CHAOS_KILLS=8 CHAOS_SEED=7 scripts/chaos/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export CHAOS_RECORDS="${CHAOS_RECORDS:-1000000}" CHAOS_KILLS="${CHAOS_KILLS:-18}"
exec go test -count=1 -tags integration -timeout 60m -v -run '^TestChaos$' ./cmd/logstore
