package fetch

import (
	"testing"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestReaderKeepsEmptyApartFromNull: an empty key, value or header value is
// an empty slice, a missing one nil, also as the first record of a fetch
// (the first copy into a fresh slab).
func TestReaderKeepsEmptyApartFromNull(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, testTopic))
	empty := []byte{}
	recs := []*kgo.Record{
		{Key: empty, Value: empty, Headers: []kgo.RecordHeader{{Key: "e", Value: empty}, {Key: "n"}}},
		{Key: nil, Value: nil},
		{Key: empty, Value: []byte("v")},
		{Key: []byte("k"), Value: empty},
	}
	for _, rec := range recs {
		produce(t, c.ListenAddrs(), nil, rec) // one batch, so one fetch, each
	}
	for start := range int64(len(recs)) {
		r := testReader(t, c.ListenAddrs(), ReaderConfig{})
		r.SetOffset(start)
		msgs := readTo(t, r, int64(len(recs)))
		for i, m := range msgs {
			want := recs[int(start)+i]
			if (m.Key == nil) != (want.Key == nil) || string(m.Key) != string(want.Key) {
				t.Errorf("from %d, record %d: key %#v, want %#v", start, m.Offset, m.Key, want.Key)
			}
			if (m.Value == nil) != (want.Value == nil) || string(m.Value) != string(want.Value) {
				t.Errorf("from %d, record %d: value %#v, want %#v", start, m.Offset, m.Value, want.Value)
			}
			for j, h := range want.Headers {
				if got := m.Headers[j]; got.Key != h.Key || (got.Value == nil) != (h.Value == nil) {
					t.Errorf("from %d, record %d: header %q value %#v, want %#v", start, m.Offset, h.Key, got.Value, h.Value)
				}
			}
		}
	}
}
