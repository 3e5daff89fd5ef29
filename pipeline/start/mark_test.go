package start

import (
	"strings"
	"testing"
)

func TestParseMark(t *testing.T) {
	layout := `{"max_file_bytes":1}`
	const id = "b9f83c9883f442a8a19b6b7c907c4f04"
	long := strings.Repeat("x", 4000)
	tests := []struct {
		meta string
		want Mark
	}{
		{"cut:41", Mark{Last: 41}}, // a mark of an older version
		{"cut:41 layout:" + Fingerprint(layout) + " " + layout, Mark{Last: 41, Layout: layout, Fingerprint: Fingerprint(layout)}}, // and a newer one
		{MarkOf(41, "", layout), Mark{Last: 41, Layout: layout, Fingerprint: Fingerprint(layout)}},
		{MarkOf(41, id, layout), Mark{Last: 41, TopicID: id, Layout: layout, Fingerprint: Fingerprint(layout)}},
		{MarkOf(41, id, ""), Mark{Last: 41, TopicID: id}},
		{MarkOf(41, "", ""), Mark{Last: 41}},
		{"cut:41 layout:000000000000 " + layout, Mark{Last: 41, Fingerprint: "000000000000"}}, // not what was written
		{MarkOf(41, id, long), Mark{Last: 41, TopicID: id, Fingerprint: Fingerprint(long)}},   // too long to record: fingerprint only
		{"someone else's", Mark{Last: -1}},
		{"", Mark{Last: -1}},
	}
	for _, tt := range tests {
		if got := ParseMark(tt.meta); got != tt.want {
			t.Errorf("ParseMark(%.60q) = %+v; want %+v", tt.meta, got, tt.want)
		}
	}
	if m := MarkOf(41, id, long); len(m) > MaxMarkBytes {
		t.Errorf("a mark of %d bytes", len(m))
	}
}
