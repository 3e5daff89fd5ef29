package bench;

import java.io.IOException;
import java.time.Instant;
import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

import org.apache.avro.LogicalTypes;
import org.apache.avro.Schema;
import org.apache.avro.SchemaBuilder;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.core.fs.Path;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.formats.avro.typeutils.GenericRecordAvroTypeInfo;
import org.apache.flink.formats.json.JsonDeserializationSchema;
import org.apache.flink.formats.parquet.ParquetBuilder;
import org.apache.flink.formats.parquet.ParquetWriterFactory;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.DeserializationFeature;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.filesystem.BucketAssigner;
import org.apache.flink.streaming.api.functions.sink.filesystem.OutputFileConfig;
import org.apache.flink.streaming.api.functions.sink.filesystem.bucketassigners.SimpleVersionedStringSerializer;
import org.apache.flink.util.Collector;
import org.apache.flink.util.jackson.JacksonMapperFactory;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.parquet.avro.AvroParquetWriter;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.OutputFile;

/**
 * The Apache Flink baseline of scripts/bench: the job logstore replaces, written
 * the way a team writes it with Flink's DataStream API. A bounded KafkaSource
 * reads the topic from the earliest offsets to the latest ones seen at the
 * start, Flink's JSON format (Jackson) decodes each value into a POJO, which
 * becomes an Avro record with the columns of cmd/logstore/demo.yaml (the
 * same as scripts/bench_spark.py writes), and a FileSink with flink-parquet's
 * bulk format writes zstd (level 3) Parquet into dt=/hour= folders. It runs
 * in one JVM: a local environment of parallelism 2 in BATCH mode, so the
 * sink commits its files when the input ends, with no checkpoints.
 *
 * <p>With --kafka-topic it does the whole flow of the job: a KafkaSink on the
 * same stream produces each row back to Kafka as a JSON object (Avro's JSON
 * rendering of the record), at least once, beside the FileSink.
 *
 * <p>It prints one JSON line: the job's own time, the records read and when
 * the first was read (unix ms), for the bench's table.
 */
public final class Main {
    // The deserializer runs in this JVM's task threads (a local environment),
    // so plain statics carry what the summary line needs out of the job.
    static final AtomicLong FIRST_RECORD_MS = new AtomicLong(Long.MAX_VALUE);
    static final LongAdder RECORDS = new LongAdder();

    /** The value's shape, as bench_spark.py's LOG_SCHEMA. */
    public static class Log {
        public String ts;
        public String level;
        public String service;
        public String host;
        public String message;
        public Http http;
        public Map<String, String> labels;
        public String trace_id;
    }

    public static class Http {
        public String method;
        public String path;
        public Integer status;
        public Double latency_ms;
    }

    /** demo.yaml's 14 columns; dt and hour are folders, as Spark's partitionBy. */
    static final String SCHEMA = SchemaBuilder.record("log").namespace("bench").fields()
            .name("ts").type(LogicalTypes.timestampMillis().addToSchema(Schema.create(Schema.Type.LONG))).noDefault()
            .optionalString("level")
            .optionalString("service")
            .optionalString("host")
            .optionalString("message")
            .optionalString("method")
            .optionalString("path")
            .optionalInt("status")
            .optionalDouble("latency_ms")
            .name("labels").type().optional().map().values().stringType()
            .optionalString("trace_id")
            .requiredBoolean("is_error")
            .requiredInt("kafka_partition")
            .requiredLong("kafka_offset")
            .endRecord().toString();

    /** Kafka record to Avro row: the JSON value, its partition and offset. */
    static final class Decode implements KafkaRecordDeserializationSchema<GenericRecord> {
        private final JsonDeserializationSchema<Log> json = new JsonDeserializationSchema<>(Log.class,
                () -> JacksonMapperFactory.createObjectMapper()
                        .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false));
        private transient Schema schema;

        @Override
        public void open(DeserializationSchema.InitializationContext context) throws Exception {
            json.open(context);
            schema = new Schema.Parser().parse(SCHEMA);
        }

        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> rec, Collector<GenericRecord> out) throws IOException {
            if (FIRST_RECORD_MS.get() == Long.MAX_VALUE) {
                FIRST_RECORD_MS.accumulateAndGet(System.currentTimeMillis(), Math::min);
            }
            Log log = json.deserialize(rec.value());
            GenericRecord r = new GenericData.Record(schema);
            r.put("ts", Instant.parse(log.ts).toEpochMilli());
            r.put("level", log.level);
            r.put("service", log.service);
            r.put("host", log.host);
            r.put("message", log.message);
            Integer status = null;
            if (log.http != null) {
                status = log.http.status;
                r.put("method", log.http.method);
                r.put("path", log.http.path);
                r.put("status", status);
                r.put("latency_ms", log.http.latency_ms);
            }
            r.put("labels", log.labels);
            r.put("trace_id", log.trace_id);
            r.put("is_error", status != null && status >= 500);
            r.put("kafka_partition", rec.partition());
            r.put("kafka_offset", rec.offset());
            RECORDS.increment();
            out.collect(r);
        }

        @Override
        public TypeInformation<GenericRecord> getProducedType() {
            return new GenericRecordAvroTypeInfo(new Schema.Parser().parse(SCHEMA));
        }
    }

    /** dt=YYYY-MM-DD/hour=HH of the event time, in UTC (Spark's date_format). */
    static final class EventHour implements BucketAssigner<GenericRecord, String> {
        @Override
        public String getBucketId(GenericRecord r, Context context) {
            long ms = (Long) r.get("ts");
            long day = Math.floorDiv(ms, 86_400_000L);
            long hour = Math.floorMod(ms, 86_400_000L) / 3_600_000L;
            return "dt=" + LocalDate.ofEpochDay(day) + "/hour=" + (hour < 10 ? "0" : "") + hour;
        }

        @Override
        public SimpleVersionedSerializer<String> getSerializer() {
            return SimpleVersionedStringSerializer.INSTANCE;
        }
    }

    /**
     * parquet-avro's writer with zstd at level 3, Spark's and logstore's:
     * flink-parquet's ready-made AvroParquetWriters sets no codec, so it
     * would write uncompressed pages.
     */
    static final class ZstdParquet implements ParquetBuilder<GenericRecord> {
        @Override
        public ParquetWriter<GenericRecord> createWriter(OutputFile out) throws IOException {
            org.apache.hadoop.conf.Configuration conf = new org.apache.hadoop.conf.Configuration(false);
            conf.setInt("parquet.compression.codec.zstd.level", 3);
            return AvroParquetWriter.<GenericRecord>builder(out)
                    .withSchema(new Schema.Parser().parse(SCHEMA))
                    .withDataModel(GenericData.get())
                    .withConf(conf)
                    .withCompressionCodec(CompressionCodecName.ZSTD)
                    .build();
        }
    }

    /** The row as JSON: Avro's rendering of the record. */
    static final class RowJson implements SerializationSchema<GenericRecord> {
        @Override
        public byte[] serialize(GenericRecord r) {
            return r.toString().getBytes(StandardCharsets.UTF_8);
        }
    }

    public static void main(String[] args) throws Exception {
        String brokers = null, topic = null, output = null, rack = "", kafkaTopic = null, compression = "lz4";
        int parallelism = 2;
        boolean objectReuse = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--brokers" -> brokers = args[++i];
                case "--topic" -> topic = args[++i];
                case "--output" -> output = args[++i];
                case "--rack" -> rack = args[++i];
                case "--parallelism" -> parallelism = Integer.parseInt(args[++i]);
                case "--object-reuse" -> objectReuse = true;
                case "--kafka-topic" -> kafkaTopic = args[++i];
                case "--kafka-compression" -> compression = args[++i];
                default -> throw new IllegalArgumentException("unknown argument " + args[i]
                        + "; want --brokers B --topic T --output DIR [--rack R] [--parallelism N] [--object-reuse]"
                        + " [--kafka-topic OUT [--kafka-compression C]]");
            }
        }
        if (brokers == null || topic == null || output == null) {
            throw new IllegalArgumentException("want --brokers, --topic and --output");
        }

        Configuration conf = new Configuration();
        conf.set(ExecutionOptions.RUNTIME_MODE, RuntimeExecutionMode.BATCH);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(parallelism, conf);
        if (objectReuse) {
            env.getConfig().enableObjectReuse();
        }

        final String clientRack = rack;
        KafkaSource<GenericRecord> source = KafkaSource.<GenericRecord>builder()
                .setBootstrapServers(brokers)
                .setTopics(topic)
                .setGroupId("logstore-bench-flink-" + topic)
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setBounded(OffsetsInitializer.latest())
                .setRackIdSupplier(() -> clientRack)
                .setDeserializer(new Decode())
                .build();

        FileSink<GenericRecord> sink = FileSink
                .forBulkFormat(new Path(new java.io.File(output).getAbsoluteFile().toURI()),
                        new ParquetWriterFactory<>(new ZstdParquet()))
                .withBucketAssigner(new EventHour())
                .withOutputFileConfig(OutputFileConfig.builder().withPartSuffix(".parquet").build())
                .build();

        DataStream<GenericRecord> rows = env.fromSource(source, WatermarkStrategy.noWatermarks(), "kafka");
        rows.sinkTo(sink).name("parquet");
        if (kafkaTopic != null) {
            Properties props = new Properties();
            props.setProperty("compression.type", compression);
            props.setProperty("acks", "all");
            rows.sinkTo(KafkaSink.<GenericRecord>builder()
                    .setBootstrapServers(brokers)
                    .setKafkaProducerConfig(props)
                    .setRecordSerializer(KafkaRecordSerializationSchema.builder()
                            .setTopic(kafkaTopic)
                            .setValueSerializationSchema(new RowJson())
                            .build())
                    .setDeliveryGuarantee(DeliveryGuarantee.AT_LEAST_ONCE)
                    .build()).name("kafka");
        }

        long started = System.currentTimeMillis();
        JobExecutionResult result = env.execute("logstore-bench-flink");
        long first = FIRST_RECORD_MS.get();
        System.out.printf("{\"job_seconds\": %.3f, \"input_rows\": %d, \"job_started_unix\": %.3f, \"first_record_unix\": %s}%n",
                result.getNetRuntime() / 1000.0, RECORDS.sum(), started / 1000.0,
                first == Long.MAX_VALUE ? "null" : String.format("%.3f", first / 1000.0));
    }
}
