package sink

import (
	"testing"
	"time"
)

// BenchmarkParquetEncode encodes realistic log rows (logSchema: timestamp,
// level, service, host, a ~150-byte message, status, latency, a labels map,
// trace id, a small JSON payload) with each codec, and once more with zstd
// and no dictionary encoding. MB/s counts the rows as JSON lines, the form
// they arrive in; size/json is the Parquet file's size over those bytes.
// The encoder runs on one goroutine: the figures are per core.
func BenchmarkParquetEncode(b *testing.B) {
	const n = 50_000
	rows := logRows(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), n)
	var jsonBytes int64
	for _, r := range rows {
		j, err := appendRowJSON(nil, logSchema, r)
		if err != nil {
			b.Fatal(err)
		}
		jsonBytes += int64(len(j)) + 1
	}
	type variant struct {
		name, codec string
		dictionary  bool
	}
	var variants []variant
	for _, codec := range ParquetCompressions {
		variants = append(variants, variant{codec, codec, true})
	}
	variants = append(variants, variant{"zstd-plain", "zstd", false})
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			cfg := testParquetConfig()
			cfg.Compression = v.codec
			cfg.Dictionary = &v.dictionary
			b.SetBytes(jsonBytes)
			b.ReportAllocs()
			var out countingWriter
			for b.Loop() {
				out = 0
				w, err := newParquetWriter(&out, logSchema, cfg, nil)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range rows {
					if err := w.WriteRow(r); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(out)/float64(jsonBytes), "size/json")
		})
	}
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}
