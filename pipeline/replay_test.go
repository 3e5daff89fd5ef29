package pipeline

import (
	"testing"
	"time"
)

func TestParseCaptured(t *testing.T) {
	tests := []struct {
		name, line string
		partition  int
		key, value string
		at         time.Time
		headers    int
		wantErr    bool
	}{
		{"string value", `{"key":"k","value":"{\"a\":1}","timestamp":"2026-11-29T07:00:00Z","partition":3}`, 3, "k", `{"a":1}`, time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC), 0, false},
		{"object value, epoch ms", `{"value":{"a":1},"timestamp":1795935600000}`, -1, "", `{"a":1}`, time.UnixMilli(1795935600000), 0, false},
		{"headers as object", `{"value":"x","headers":{"b":"2","a":"1"}}`, -1, "", "x", time.Time{}, 2, false},
		{"headers as list", `{"value":"x","headers":[{"key":"a","value":"1"}]}`, -1, "", "x", time.Time{}, 1, false},
		{"bad timestamp", `{"value":"x","timestamp":"yesterday"}`, 0, "", "", time.Time{}, 0, true},
		{"not json", `value=x`, 0, "", "", time.Time{}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := parseCaptured([]byte(tt.line))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			partition := -1
			if m.Pinned {
				partition = int(m.Partition)
			}
			if partition != tt.partition || string(m.Key) != tt.key || string(m.Value) != tt.value || !m.Time.Equal(tt.at) || len(m.Headers) != tt.headers {
				t.Errorf("got partition %d key %q value %q time %v headers %v", m.Partition, m.Key, m.Value, m.Time, m.Headers)
			}
		})
	}
	m, _ := parseCaptured([]byte(`{"value":"x","headers":{"b":"2","a":"1"}}`))
	if m.Headers[0].Key != "a" {
		t.Errorf("object headers are not in a stable order: %v", m.Headers)
	}
}
