package decode

import (
	"math"
	"testing"
)

func TestDecimalInt64(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"-0", 0, true},
		{"-0.0e7", 0, true},
		{"007", 7, true},
		{"200.0", 200, true},
		{"2e3", 2000, true},
		{"2.5E+1", 25, true},
		{"12500e-2", 125, true},
		{"9007199254740993", 9007199254740993, true},
		{"9007199254740993.0", 9007199254740993, true},
		{"1234567890123456789e0", 1234567890123456789, true},
		{"123456789012345678.9e1", 1234567890123456789, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"9.223372036854775807e18", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"-9223372036854775808.000", math.MinInt64, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"9223372036854775807.5", 0, false},
		{"200.5", 0, false},
		{"1e19", 0, false},
		{"1e-1", 0, false},
		{"1e999999999999999999999", 0, false},
		{"0e999999999999999999999", 0, true},
		{"1" + zeros(400) + "e-400", 1, true},
		{"", 0, false},
		{"-", 0, false},
		{"+1", 0, false},
		{"1.", 0, false},
		{".5", 0, false},
		{"1e", 0, false},
		{"1e+", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"0x10", 0, false},
		{"NaN", 0, false},
	}
	for _, tt := range tests {
		d, ok := parseDecimal([]byte(tt.in))
		var got int64
		if ok {
			got, ok = d.int64()
		}
		if ok != tt.ok || got != tt.want {
			t.Errorf("%q: got %d %v, want %d %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func zeros(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = '0'
	}
	return string(b)
}
