#!/usr/bin/env python3
"""Reads a Parquet file with pyarrow, an independent reader, and prints what
it found as JSON, so a test can compare it with the rows it wrote.

    scripts/verify_parquet.py FILE [--rows]

Prints {"num_rows", "num_row_groups", "created_by", "schema": [{"name",
"type", "nullable"}], "columns": [{"name", "compression", "encodings",
"has_statistics", "has_dictionary"}], "rows": [...]} (rows only with --rows).
The table is validated in full first (pyarrow's validate(full=True),
which checks that STRING columns are UTF-8); a failure is exit 1.
Values are written the way logstore's Kafka sink writes them: timestamps as
RFC 3339 in UTC with trailing zeros trimmed, dates as YYYY-MM-DD, bytes as
base64, maps as objects, NaN and infinities as "NaN", "Infinity",
"-Infinity". Any warning pyarrow raises is an error (exit 1).
"""
import base64
import datetime
import json
import math
import sys
import warnings


def rfc3339(ts):
    ts = ts.astimezone(datetime.timezone.utc)
    out = ts.strftime("%Y-%m-%dT%H:%M:%S")
    if ts.microsecond:
        out += ("." + f"{ts.microsecond:06d}").rstrip("0")
    return out + "Z"


def plain(v):
    if v is None:
        return None
    if isinstance(v, datetime.datetime):
        return rfc3339(v)
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode()
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return v
    if isinstance(v, list):  # pyarrow gives a map as a list of (key, value)
        if all(isinstance(e, tuple) and len(e) == 2 for e in v):
            return {k: plain(x) for k, x in v}
        return [plain(e) for e in v]
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    return v


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    warnings.simplefilter("error")
    import pyarrow.parquet as pq

    f = pq.ParquetFile(args[0])
    # Every value checked, UTF-8 of STRING columns included: what Spark,
    # Trino and Athena would trip over fails here.
    f.read().validate(full=True)
    md = f.metadata
    schema = f.schema_arrow
    out = {
        "num_rows": md.num_rows,
        "num_row_groups": md.num_row_groups,
        "created_by": md.created_by,
        "schema": [{"name": fl.name, "type": str(fl.type), "nullable": fl.nullable} for fl in schema],
        "columns": [],
    }
    if md.num_row_groups:
        rg = md.row_group(0)
        for i in range(rg.num_columns):
            c = rg.column(i)
            out["columns"].append({
                "name": c.path_in_schema,
                "compression": c.compression,
                "encodings": list(c.encodings),
                "has_statistics": c.is_stats_set,
                "has_dictionary": c.has_dictionary_page,
            })
    if "--rows" in sys.argv:
        out["rows"] = [{k: plain(v) for k, v in r.items()} for r in f.read().to_pylist()]
    json.dump(out, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
