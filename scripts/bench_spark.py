"""The Spark Structured Streaming baseline for scripts/bench.

The job logstore replaces, written the way teams write it: read a Kafka topic
with trigger(availableNow=True), parse the JSON value with from_json into the
columns of cmd/logstore/demo.yaml (without its `where` filter), and write
zstd Parquet in dt=/hour= folders. Run it with spark-submit (scripts/bench
does, with local[2], the spark-sql-kafka jars and the driver memory it
reports). It prints one JSON line: the query's own time and row count.

With --kafka-topic it does the whole flow of the job: each micro-batch is
written as Parquet and produced back to Kafka (the row as a JSON object,
to_json), in one foreachBatch, the way Spark users write to two sinks from
one query (the batch is cached, so Kafka is read and decoded once).

Spark sets one client.rack for every executor (SPARK-46798), so --rack only
tells the brokers where this single local executor is.
"""

import argparse
import json
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DoubleType,
    IntegerType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

# The value's shape; the names and types match demo.yaml's columns.
LOG_SCHEMA = StructType(
    [
        StructField("ts", TimestampType()),
        StructField("level", StringType()),
        StructField("service", StringType()),
        StructField("host", StringType()),
        StructField("message", StringType()),
        StructField(
            "http",
            StructType(
                [
                    StructField("method", StringType()),
                    StructField("path", StringType()),
                    StructField("status", IntegerType()),
                    StructField("latency_ms", DoubleType()),
                ]
            ),
        ),
        StructField("labels", MapType(StringType(), StringType())),
        StructField("trace_id", StringType()),
    ]
)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--output", required=True, help="Parquet folder")
    ap.add_argument("--checkpoint", required=True, help="checkpoint folder")
    ap.add_argument("--rack", default="", help="kafka.client.rack for the (single) executor")
    ap.add_argument("--min-partitions", type=int, default=0,
                    help="the Kafka source's minPartitions: split offset ranges into about this many tasks")
    ap.add_argument("--kafka-topic", default="",
                    help="the whole flow: also produce each row as JSON to this topic (foreachBatch)")
    ap.add_argument("--kafka-compression", default="lz4", help="the producer's compression.type")
    args = ap.parse_args()

    spark = (
        SparkSession.builder.appName("logstore-bench-baseline")
        # logstore writes hour folders in UTC and ms timestamps.
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MILLIS")
        .config("spark.sql.parquet.compression.codec", "zstd")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")

    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.brokers)
        .option("subscribe", args.topic)
        .option("startingOffsets", "earliest")
    )
    if args.rack:
        reader = reader.option("kafka.client.rack", args.rack)
    if args.min_partitions:
        reader = reader.option("minPartitions", str(args.min_partitions))
    raw = reader.load()

    j = F.from_json(F.col("value").cast("string"), LOG_SCHEMA).alias("j")
    rows = raw.select(j, F.col("partition"), F.col("offset")).select(
        F.col("j.ts").alias("ts"),
        F.col("j.level").alias("level"),
        F.col("j.service").alias("service"),
        F.col("j.host").alias("host"),
        F.col("j.message").alias("message"),
        F.col("j.http.method").alias("method"),
        F.col("j.http.path").alias("path"),
        F.col("j.http.status").alias("status"),
        F.col("j.http.latency_ms").alias("latency_ms"),
        F.col("j.labels").alias("labels"),
        F.col("j.trace_id").alias("trace_id"),
        (F.col("j.http.status").isNotNull() & (F.col("j.http.status") >= 500)).alias("is_error"),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.date_format("j.ts", "yyyy-MM-dd").alias("dt"),
        F.date_format("j.ts", "HH").alias("hour"),
    )

    started, started_unix = time.monotonic(), time.time()
    if args.kafka_topic:
        columns = [c for c in rows.columns if c not in ("dt", "hour")]

        def write_both(batch, batch_id):
            batch.persist()
            batch.write.mode("append").partitionBy("dt", "hour").parquet(args.output)
            (
                batch.select(F.to_json(F.struct(*columns)).alias("value"))
                .write.format("kafka")
                .option("kafka.bootstrap.servers", args.brokers)
                .option("kafka.compression.type", args.kafka_compression)
                .option("kafka.acks", "all")
                .option("topic", args.kafka_topic)
                .save()
            )
            batch.unpersist()

        writer = rows.writeStream.foreachBatch(write_both)
    else:
        writer = rows.writeStream.format("parquet").option("path", args.output).partitionBy("dt", "hour")
    query = writer.option("checkpointLocation", args.checkpoint).trigger(availableNow=True).start()
    query.awaitTermination()
    elapsed = time.monotonic() - started
    records = sum(p.get("numInputRows", 0) for p in query.recentProgress)
    # query_started_unix: the earliest a record can be read (the bench's
    # first_record_s for Spark is this, a lower bound).
    print(json.dumps({"query_seconds": round(elapsed, 3), "input_rows": records, "batches": len(query.recentProgress),
                      "query_started_unix": round(started_unix, 3)}))
    spark.stop()


if __name__ == "__main__":
    main()
