#!/usr/bin/env python3
"""Reads a logstore Iceberg table with Spark and the Iceberg runtime, a
second independent reader beside pyiceberg (scripts/read_iceberg.py):
through Iceberg's JdbcCatalog on the SQL catalog's SQLite file (iceberg-go
and Iceberg's JDBC catalog share the iceberg_tables schema, V1) or through
a REST catalog (scripts/iceberg-rest.sh), with S3FileIO on the S3 server.

    python3 -m venv ~/.cache/logstore/spark41-venv
    ~/.cache/logstore/spark41-venv/bin/pip install pyspark==4.1.4    # once
    eval "$(scripts/s3-server.sh env)"
    ~/.cache/logstore/spark41-venv/bin/python scripts/spark_read_iceberg.py \
        (--catalog FILE | --rest URI) --table logs.raw [--name logstore]

Spark 4.1, not the bench venv's 4.2: Iceberg publishes no runtime for 4.2
yet, and the 4.1 runtime fails on 4.2 (SparkView "can not implement
org.apache.spark.sql.connector.catalog.View"). The Iceberg runtime for
Spark 4.1 (Scala 2.13), its AWS bundle and sqlite-jdbc are fetched with
Maven into $LOGSTORE_CACHE/spark-iceberg-<version> once. The S3 endpoint
and credentials come from the environment. Prints JSON: the types Spark
sees, the row count, the rows per Kafka partition, how many (partition,
offset) pairs appear more than once, and the seconds Spark took.
"""
import argparse
import json
import os
import subprocess
import sys
import time

ICEBERG = os.environ.get("ICEBERG_VERSION", "1.11.0")
ARTIFACTS = [
    f"org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:{ICEBERG}",
    f"org.apache.iceberg:iceberg-aws-bundle:{ICEBERG}",
    "org.xerial:sqlite-jdbc:3.50.3.0",
]


def jars():
    cache = os.path.join(os.environ.get("LOGSTORE_CACHE", os.path.expanduser("~/.cache/logstore")), f"spark-iceberg-{ICEBERG}")
    out = []
    for a in ARTIFACTS:
        _, name, version = a.split(":")
        jar = os.path.join(cache, f"{name}-{version}.jar")
        if not os.path.exists(jar):
            print(f"spark_read_iceberg: fetching {a} with Maven into {cache} (once)", file=sys.stderr)
            subprocess.run(["mvn", "-q", "-B", "dependency:copy", f"-Dartifact={a}", f"-DoutputDirectory={cache}"],
                           check=True, stdout=subprocess.DEVNULL)
        out.append(jar)
    return out


def main():
    ap = argparse.ArgumentParser()
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--catalog", help="the SQL catalog's SQLite file")
    where.add_argument("--rest", help="the REST catalog's URI")
    ap.add_argument("--table", required=True)
    ap.add_argument("--name", default="logstore", help="the SQL catalog's name (sinks.iceberg.catalog.name)")
    a = ap.parse_args()

    t0 = time.monotonic()
    from pyspark.sql import SparkSession

    # JdbcCatalog keeps its rows under the Spark catalog's name: it is the
    # name the job's SQL catalog used.
    c = "spark.sql.catalog." + a.name
    b = (SparkSession.builder.master("local[2]").appName("spark_read_iceberg")
         .config("spark.ui.enabled", "false")
         .config("spark.jars", ",".join(jars()))
         .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
         .config(c, "org.apache.iceberg.spark.SparkCatalog")
         .config(c + ".io-impl", "org.apache.iceberg.aws.s3.S3FileIO")
         .config(c + ".s3.endpoint", os.environ["AWS_ENDPOINT_URL_S3"])
         .config(c + ".s3.path-style-access", "true")
         .config(c + ".s3.access-key-id", os.environ["AWS_ACCESS_KEY_ID"])
         .config(c + ".s3.secret-access-key", os.environ["AWS_SECRET_ACCESS_KEY"])
         .config(c + ".client.region", os.environ.get("AWS_REGION", "us-east-1")))
    if a.rest:
        b = b.config(c + ".type", "rest").config(c + ".uri", a.rest)
    else:
        b = (b.config(c + ".type", "jdbc").config(c + ".uri", "jdbc:sqlite:file:" + a.catalog)
             .config(c + ".jdbc.schema-version", "V1")
             # JdbcCatalog wants one though a reader creates no table.
             .config(c + ".warehouse", "file://" + os.path.dirname(os.path.abspath(a.catalog))))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    df = spark.table(f"{a.name}.{a.table}")
    per = {r["kafka_partition"]: r["count"] for r in df.groupBy("kafka_partition").count().collect()}
    repeated = df.groupBy("kafka_partition", "kafka_offset").count().filter("count > 1").count()
    out = {
        "spark": spark.version,
        "types": {f.name: f.dataType.simpleString() for f in df.schema.fields},
        "count": sum(per.values()),
        "per_partition": {str(k): v for k, v in sorted(per.items())},
        "repeated": repeated,
        "seconds": round(time.monotonic() - t0, 1),
    }
    json.dump(out, sys.stdout)
    print()
    spark.stop()


if __name__ == "__main__":
    main()
