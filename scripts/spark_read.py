#!/usr/bin/env python3
"""Reads a logstore output folder with Spark, a second independent reader:

    python scripts/spark_read.py DIR   # with pyspark installed (scripts/bench makes a venv)

Prints the schema Spark sees, the rows per Hive folder and the dead letters.
"""
import sys, warnings
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled","false").getOrCreate()
spark.sparkContext.setLogLevel("WARN")
df = spark.read.option("basePath", sys.argv[1]).parquet(sys.argv[1])
df.printSchema()
print("rows", df.count())
df.groupBy("dt","hour").count().orderBy("hour").show()
print(df.filter("is_error").count(), "errors;", df.selectExpr("max(ts)", "min(ts)", "avg(latency_ms)", "count(labels['zone'])").collect())
dl = spark.read.parquet(sys.argv[1] + "/_errors")
print("dead letters", dl.count()); dl.select("reason","offset").show(3, truncate=80)
