package decode

import (
	"math"
	"math/rand/v2"
	"strconv"
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

// TestPlainIntegerAgreesWithDecimal: parseInteger's fast path gives what
// the exact decimal reading gives, or leaves the input to it.
func TestPlainIntegerAgreesWithDecimal(t *testing.T) {
	in := []string{"0", "-0", "7", "-7", "200", "007", "-05", "123456789012345678", "-123456789012345678",
		"1234567890123456789", "9223372036854775807", "-9223372036854775808", "1e3", "2.0", "", "-", "1-2", "12a", " 1", "+1"}
	for i := int64(1); i < 1<<62; i = i*3 + 1 {
		in = append(in, strconv.FormatInt(i, 10), strconv.FormatInt(-i, 10))
	}
	for _, s := range in {
		n, ok := parsePlainInteger([]byte(s))
		if !ok {
			continue
		}
		d, dok := parseDecimal([]byte(s))
		want, wok := d.int64()
		if !dok || !wok || n != want {
			t.Errorf("%q: fast path %d, exact %d (%v %v)", s, n, want, dok, wok)
		}
	}
}

// TestDecimalFloat64 holds the fast path to strconv.ParseFloat, bit for
// bit, on numbers spelled every way a log writes them: up to 17 digits,
// leading and trailing zeros, the point anywhere, exponents from -30 to
// 30, both signs. Where the fast path declines, strconv decides.
func TestDecimalFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	took := 0
	for range 200_000 {
		digits := make([]byte, 1+r.IntN(17))
		for i := range digits {
			digits[i] = byte('0' + r.IntN(10))
		}
		s := string(digits)
		if p := r.IntN(len(digits) + 1); p > 0 && p < len(digits) {
			s = s[:p] + "." + s[p:]
		}
		if r.IntN(3) == 0 {
			s += "e" + strconv.Itoa(r.IntN(61)-30)
		}
		if r.IntN(2) == 0 {
			s = "-" + s
		}
		d, ok := parseDecimal([]byte(s))
		if !ok {
			t.Fatalf("%q: not read", s)
		}
		got, ok := d.float64()
		if !ok {
			continue
		}
		took++
		want, err := strconv.ParseFloat(s, 64)
		if err != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%q: %v (%x), strconv %v (%x) %v", s, got, math.Float64bits(got), want, math.Float64bits(want), err)
		}
	}
	if took < 100_000 {
		t.Errorf("the fast path took %d of 200,000 numbers; most have at most 15 digits", took)
	}
	for _, s := range []string{"12.75", "0.001", "-0.0", "183.25", "1e22", "123456789012345"} {
		d, _ := parseDecimal([]byte(s))
		if _, ok := d.float64(); !ok {
			t.Errorf("%q: the fast path declined", s)
		}
	}
}

// FuzzDecimalFloat64: whatever the fast path reads, strconv reads the same.
func FuzzDecimalFloat64(f *testing.F) {
	for _, s := range []string{"12.75", "-0.0", "1e22", "9007199254740993", "0.1e-22", "123456789012345e7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := parseDecimal([]byte(s))
		if !ok {
			return
		}
		got, ok := d.float64()
		if !ok {
			return
		}
		want, err := strconv.ParseFloat(s, 64)
		if err != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%q: %v, strconv %v %v", s, got, want, err)
		}
	})
}

// BenchmarkFloat64 reads a latency as the decoder does, with the fast path
// and with strconv alone.
func BenchmarkFloat64(b *testing.B) {
	in := []byte("183.25")
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			d, _ := parseDecimal(in)
			if _, ok := d.float64(); !ok {
				b.Fatal("declined")
			}
		}
	})
	b.Run("strconv", func(b *testing.B) {
		for b.Loop() {
			parseDecimal(in)
			if _, err := strconv.ParseFloat(string(in), 64); err != nil {
				b.Fatal(err)
			}
		}
	})
}
