#!/usr/bin/env python3
"""Reads the Iceberg table a chaos run committed to, as a user's reader
would (pyiceberg through the SQL catalog on a SQLite file), and prints what
its current snapshot holds as JSON: per source partition the rows' count,
distinct offsets, sum, min and max (from kafka_partition and kafka_offset),
the data files it references and any it references more than once.

    scripts/chaos/checktable.py --catalog FILE --table NS.NAME [--name logstore]

The S3 endpoint and credentials come from the standard AWS_ENDPOINT_URL_S3,
AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
"""
import argparse
import collections
import json
import os
import sys

from pyiceberg.catalog.sql import SqlCatalog

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from verify_dataset import summarize  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--catalog", required=True, help="the SQLite file")
    ap.add_argument("--name", default="logstore")
    ap.add_argument("--table", required=True)
    a = ap.parse_args()
    props = {"uri": "sqlite:///" + a.catalog}
    if os.environ.get("AWS_ENDPOINT_URL_S3"):
        props.update({"s3.endpoint": os.environ["AWS_ENDPOINT_URL_S3"], "s3.access-key-id": os.environ.get("AWS_ACCESS_KEY_ID"),
                      "s3.secret-access-key": os.environ.get("AWS_SECRET_ACCESS_KEY"), "s3.region": os.environ.get("AWS_REGION", "us-east-1"),
                      "s3.force-virtual-addressing": "false"})
    tbl = SqlCatalog(a.name, **props).load_table(a.table)
    scan = tbl.scan(selected_fields=("kafka_partition", "kafka_offset"))
    paths = collections.Counter(t.file.file_path for t in scan.plan_files())
    arrow = scan.to_arrow()
    json.dump({
        "snapshots": len(tbl.metadata.snapshots),
        "files": len(paths),
        "files_twice": sorted(p for p, c in paths.items() if c > 1),
        "rows": arrow.num_rows,
        "partitions": summarize(arrow, "kafka_partition", "kafka_offset"),
    }, sys.stdout)


if __name__ == "__main__":
    main()
