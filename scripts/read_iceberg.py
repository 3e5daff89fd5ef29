#!/usr/bin/env python3
"""Reads an Iceberg table the way a user's reader would (pyiceberg >= 0.12,
through the SQL catalog on a SQLite file, or through a REST catalog) and
prints, as JSON, its schema's types, partition spec, snapshot count, the
current snapshot's data files and every row (timestamps in ISO 8601, bytes
in hex).

    read_iceberg.py (--catalog FILE | --rest URI) --name logstore --table logs.raw \
        [--s3-endpoint http://127.0.0.1:7070 --s3-key K --s3-secret S] [--where FILTER] \
        [--count | --count-only | --plan-only | --sort-order]

--count prints the row count alone; --count-only the JSON without the rows;
--plan-only the data files the filter plans (by partition and column
metrics), reading no rows; --sort-order the table's sort orders and, per
data file, its sort_order_id and the values of the sort columns in the
file's row order.
"""
import argparse
import base64
import datetime
import json
import sys

from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.catalog.sql import SqlCatalog


def plain(v):
    if isinstance(v, (datetime.datetime, datetime.date)):
        return v.isoformat()
    if isinstance(v, bytes):
        return base64.b16encode(v).decode().lower()
    if isinstance(v, list):  # a map column comes back as [(key, value), ...]
        return {k: x for k, x in v}
    return v


def main():
    ap = argparse.ArgumentParser()
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--catalog", help="the SQL catalog's SQLite file")
    where.add_argument("--rest", help="the REST catalog's URI")
    ap.add_argument("--name", default="logstore")
    ap.add_argument("--table", required=True)
    ap.add_argument("--s3-endpoint")
    ap.add_argument("--s3-key")
    ap.add_argument("--s3-secret")
    ap.add_argument("--count-only", action="store_true", help="the JSON without its rows")
    ap.add_argument("--count", action="store_true", help="print the row count alone")
    ap.add_argument("--plan-only", action="store_true", help="list the data files the filter plans, read no rows")
    ap.add_argument("--sort-order", action="store_true", help="the sort orders and each file's order")
    ap.add_argument("--where", default="True", help="a row filter, e.g. \"level = ''\"; files whose partition cannot match are skipped")
    a = ap.parse_args()
    props = {"uri": a.rest or "sqlite:///" + a.catalog}
    if a.s3_endpoint:
        props.update({"s3.endpoint": a.s3_endpoint, "s3.access-key-id": a.s3_key,
                      "s3.secret-access-key": a.s3_secret, "s3.region": "us-east-1",
                      "s3.force-virtual-addressing": "false"})
    catalog = RestCatalog if a.rest else SqlCatalog
    tbl = catalog(a.name, **props).load_table(a.table)
    if a.count:
        print(tbl.scan(row_filter=a.where).to_arrow().num_rows)
        return
    if a.sort_order:
        import pyarrow.parquet as pq
        cols = [tbl.schema().find_field(f.source_id).name for f in tbl.sort_order().fields]
        files = []
        for t in tbl.scan().plan_files():
            path = t.file.file_path.removeprefix("file://")
            rows = pq.read_table(path, columns=cols).to_pylist() if cols else []
            files.append({"path": t.file.file_path, "sort_order_id": t.file.sort_order_id,
                          "rows": [[r[c] for c in cols] for r in rows]})
        json.dump({"default_sort_order_id": tbl.metadata.default_sort_order_id,
                   "sort_order": [f"{tbl.schema().find_field(f.source_id).name} {f.direction} {f.null_order}"
                                  for f in tbl.sort_order().fields],
                   "sort_orders": len(tbl.metadata.sort_orders), "data_files": files}, sys.stdout)
        return
    if a.plan_only:
        json.dump({"snapshots": len(tbl.metadata.snapshots),
                   "files": sorted(t.file.file_path for t in tbl.scan(row_filter=a.where).plan_files()),
                   "all_files": len(list(tbl.scan().plan_files()))}, sys.stdout)
        return
    arrow = tbl.scan(row_filter=a.where).to_arrow()
    out = {
        "types": {f.name: str(f.field_type) for f in tbl.schema().fields},
        "required": [f.name for f in tbl.schema().fields if f.required],
        "arrow_types": {f.name: str(f.type) for f in arrow.schema},
        "spec": [f"{f.transform}({tbl.schema().find_field(f.source_id).name})" for f in tbl.spec().fields],
        "snapshots": len(tbl.metadata.snapshots),
        "files": sorted(t.file.file_path for t in tbl.scan(row_filter=a.where).plan_files()),
        "count": arrow.num_rows,
    }
    if not a.count_only:
        out["rows"] = [{k: plain(v) for k, v in r.items()} for r in arrow.to_pylist()]
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
