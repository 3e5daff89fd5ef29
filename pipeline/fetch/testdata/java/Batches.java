// Writes one record batch per codec as Kafka's Java client encodes it (its
// own gzip, xerial-framed snappy, lz4 and zstd streams), for
// TestReaderReadsJavaClientBatches. 300 records from offset 100, value
// {"n":I}; header gid=I; every 30th from the 7th a trace header with an
// empty value (length 0), from the 8th one with a null value (length -1).
// Regenerate with the cluster's jars:
//   java -cp "$KAFKA_LIBS/*" Batches.java .
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;

public class Batches {
  public static void main(String[] args) throws Exception {
    Compression[] codecs = {Compression.NONE, Compression.gzip().build(), Compression.snappy().build(),
        Compression.lz4().build(), Compression.zstd().build()};
    String[] names = {"none", "gzip", "snappy", "lz4", "zstd"};
    for (int c = 0; c < codecs.length; c++) {
      SimpleRecord[] recs = new SimpleRecord[300];
      for (int i = 0; i < recs.length; i++) {
        Header gid = new RecordHeader("gid", Integer.toString(i).getBytes(StandardCharsets.UTF_8));
        Header[] hs = switch (i % 30) {
          case 7 -> new Header[] {gid, new RecordHeader("trace", new byte[0])};
          case 8 -> new Header[] {gid, new RecordHeader("trace", (byte[]) null)};
          default -> new Header[] {gid};
        };
        byte[] value = ("{\"n\":" + i + "}").getBytes(StandardCharsets.UTF_8);
        recs[i] = new SimpleRecord(1764396000000L + i, null, value, hs);
      }
      ByteBuffer b = MemoryRecords.withRecords(100L, codecs[c], recs).buffer();
      byte[] out = new byte[b.remaining()];
      b.get(out);
      Files.write(Path.of(args[0], names[c] + ".batch"), out);
    }
  }
}
