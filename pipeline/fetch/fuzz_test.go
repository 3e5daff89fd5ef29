package fetch

import (
	"bytes"
	"testing"

	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/fetch"
)

// FuzzFetchResponse: no Fetch response a broker (or anything posing as
// one) sends panics the decoder, and the records of one it accepts read
// without panicking either; what it cannot read is an error.
func FuzzFetchResponse(f *testing.F) {
	for _, version := range []int16{4, 7, 11} {
		res := &fetch.Response{Topics: []fetch.ResponseTopic{{Topic: testTopic, Partitions: []fetch.ResponsePartition{{
			HighWatermark: 9, LastStableOffset: 8, LogStartOffset: 3, PreferredReadReplica: 2,
			AbortedTransactions: []fetch.ResponseTransaction{{ProducerID: 5, FirstOffset: 6}},
			RecordSet: protocol.RecordSet{Version: 2, Records: protocol.NewRecordReader(
				protocol.Record{Offset: 7, Key: protocol.NewBytes([]byte{}), Value: protocol.NewBytes([]byte(`{"a": 1}`)),
					Headers: []protocol.Header{{Key: "h", Value: []byte{}}}})},
		}}}}}
		var frame bytes.Buffer
		if err := protocol.WriteResponse(&frame, version, 1, res); err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(version), frame.Bytes()[8:])
	}
	f.Add(uint8(11), []byte{})
	f.Add(uint8(4), []byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, v uint8, body []byte) {
		version := int16(4 + v%8) // v4..v11
		res, err := parseFetchResponse(version, body, testTopic, 0)
		if err != nil || res == nil || len(res.records) < 4 {
			return
		}
		scanBatches(res.records[4:])
		r := NewPartitionReader(ReaderConfig{Topic: testTopic})
		defer r.Close()
		_, _, _ = r.records(res)
	})
}
