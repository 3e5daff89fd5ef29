#!/usr/bin/env python3
"""Reads a logstore output folder with pyarrow, an independent reader, and
prints what it holds as JSON, so a test can check exactly-once delivery.

    scripts/verify_dataset.py DIR|s3://BUCKET/PREFIX [--sample P:O,P:O,...]

Rows are the Hive-partitioned Parquet files under DIR (folders starting with
_ or . are skipped, as Spark and Trino skip them); dead letters are the files
under DIR/_errors/. For each, per source partition: the row count, the number
of distinct offsets, their sum, min and max (from the kafka_partition and
kafka_offset columns of rows, and the partition and offset columns of dead
letters). --sample prints the rows at those positions. Any pyarrow warning
is an error. For s3:// the endpoint and credentials come from the standard
AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION.
"""
import datetime
import json
import os
import sys
import warnings

import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs

warnings.simplefilter("error")


def summarize(table, pcol, ocol):
    out = {}
    parts = table.column(pcol).to_pylist()
    offs = table.column(ocol).to_pylist()
    by = {}
    for p, o in zip(parts, offs):
        by.setdefault(p, []).append(o)
    for p, os_ in sorted(by.items()):
        out[str(p)] = {"count": len(os_), "distinct": len(set(os_)), "sum": sum(os_), "min": min(os_), "max": max(os_)}
    return out


def plain(v):
    if isinstance(v, datetime.datetime):
        return int(v.timestamp() * 1000)
    if isinstance(v, list) and all(isinstance(e, tuple) for e in v):
        return {k: x for k, x in v}
    return v


def filesystem(root):
    """The filesystem and the path in it for a folder or an s3:// URL."""
    if not root.startswith("s3://"):
        return None, root
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3", "")
    scheme = "http" if endpoint.startswith("http://") else "https"
    fs = pafs.S3FileSystem(access_key=os.environ.get("AWS_ACCESS_KEY_ID"), secret_key=os.environ.get("AWS_SECRET_ACCESS_KEY"),
                           region=os.environ.get("AWS_REGION", "us-east-1"), scheme=scheme,
                           endpoint_override=endpoint.split("://", 1)[-1] or None)
    return fs, root[len("s3://"):]


def isdir(fs, path):
    if fs is None:
        return os.path.isdir(path)
    return fs.get_file_info(path).type == pafs.FileType.Directory


def main():
    fs, root = filesystem(sys.argv[1])
    sample = []
    if len(sys.argv) > 3 and sys.argv[2] == "--sample":
        sample = [tuple(int(x) for x in s.split(":")) for s in sys.argv[3].split(",") if s]
    rows = ds.dataset(root, filesystem=fs, format="parquet", partitioning="hive", ignore_prefixes=["_", "."]).to_table()
    result = {"rows": rows.num_rows, "schema": {f.name: str(f.type) for f in rows.schema},
              "partitions": summarize(rows, "kafka_partition", "kafka_offset")}
    errdir = root.rstrip("/") + "/_errors"
    if isdir(fs, errdir):
        dl = ds.dataset(errdir, filesystem=fs, format="parquet").to_table()
        result["dead_letters"] = dl.num_rows
        result["dead_letter_partitions"] = summarize(dl, "partition", "offset")
        result["dead_letter_reasons"] = sorted(set(r.split(":")[0] for r in dl.column("reason").to_pylist()))[:20]
    else:
        result["dead_letters"] = 0
    if sample:
        want = set(sample)
        mask = pc.is_in(pc.add(pc.multiply(pc.cast(rows.column("kafka_partition"), "int64"), 1 << 40), rows.column("kafka_offset")),
                        value_set=__import__("pyarrow").array([p * (1 << 40) + o for p, o in want], "int64"))
        picked = rows.filter(mask).to_pylist()
        result["sample"] = [{k: plain(v) for k, v in r.items()} for r in picked]
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
