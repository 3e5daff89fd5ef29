#!/usr/bin/env bash
# The chaos suite's long run, by hand, against the local three-rack cluster
# and S3 server (scripts/kafka-cluster.sh start; scripts/s3-server.sh start):
# three members writing to S3 through a proxy that answers 503 at will and
# spooling on a 16 MiB tmpfs of their own, and a seeded plan of faults:
# members SIGKILLed at random moments and restarted, a fourth member joining
# and leaving, a broker stopped and started, S3 down and S3 flaky, the
# spool's disk filled and freed, the offsets of half the partitions deleted,
# the group deleted with its offsets; malformed records, a poison record, a
# flood of malformed records in one partition (more than a member's memory
# budget) and records stamped in microseconds as milliseconds. The members
# write files and (CHAOS_EXACTLY_ONCE=1, the default here; 0 for files
# alone) an Iceberg table (SQLite catalog) and the Kafka output with
# delivery: exactly_once, and come back from kills and the group's restarts
# with a failpoint that kills them again at a step of the table's or the
# transaction's protocol. pyarrow then checks every good record once in the
# bucket and every bad one once in _errors/, reads every file back with its
# page checksums; pyiceberg every good record once in the table's current
# snapshot and no data file referenced twice; a read_committed consumer
# every good record once in the output topic and every bad one once in the
# dead-letter topic, by their source headers; and no partition
# may stand still for more than 45 s while no fault is under way (faults one
# after another add up). A final clean run (one member, --until now) must
# then leave no temporary file and no unfinished multipart upload behind,
# in the output or the bucket. CHAOS_OUTPUT=file writes the files to a
# local folder instead of S3 (the table stays on S3).
# CHAOS_LOGS=dir keeps every member's log. The reduced run
# is TestChaos in the integration tests. Run it as root: the tmpfs needs
# mount (as another user the disk-full fault is left out).
#   scripts/chaos/run.sh                 # 1,000,000 records, 30 faults, ~10 min
#   CHAOS_RECORDS=200000 CHAOS_EVENTS=12 CHAOS_FLOOD=10000 CHAOS_SEED=7 scripts/chaos/run.sh
#   CHAOS_OUTPUT=file scripts/chaos/run.sh   # the files sink on a local folder
set -euo pipefail
cd "$(dirname "$0")/../.."
[ "${CHAOS_EXACTLY_ONCE:-1}" = 0 ] && unset CHAOS_EXACTLY_ONCE || export CHAOS_EXACTLY_ONCE=1
export CHAOS_RECORDS="${CHAOS_RECORDS:-1000000}" CHAOS_EVENTS="${CHAOS_EVENTS:-30}" CHAOS_RATE="${CHAOS_RATE:-1000}" CHAOS_FLOOD="${CHAOS_FLOOD:-10000}"
exec go test -count=1 -tags integration -timeout 60m -v -run '^TestChaos$' ./cmd/logstore
