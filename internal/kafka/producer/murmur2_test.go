package producer

import "testing"

// Every row printed by the Java client itself (kafka-clients 4.4.0 in
// jshell: Utils.murmur2 and Utils.toPositive(hash) % 12): a keyed record
// must land where a Java producer puts it. The first six are also the
// Java client's UtilsTest vectors.
func TestKeyPartitionMatchesJava(t *testing.T) {
	for _, c := range []struct {
		key  string
		hash int32
		of12 int32
	}{
		{"21", -973932308, -1},
		{"foobar", -790332482, -1},
		{"a-little-bit-long-string", -985981536, -1},
		{"a-little-bit-longer-string", -1486304829, -1},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971, -1},
		{"abc", 479470107, 3},
		{"user-1", 1404122828, 8},
		{"user-2", -324981792, 8},
		{"order-42", 501153024, 0},
		{"", 275646681, 9},
		{"a", -1563381124, 4},
		{"ab", 316155434, 2},
		{"abcd", -1323649548, 8},
		{"trace-7f3a9c", 1438244179, 7},
		{"日本語", 1431860170, 10},
	} {
		if got := murmur2([]byte(c.key)); got != c.hash {
			t.Errorf("murmur2(%q) = %d, Java gives %d", c.key, got, c.hash)
		}
		if c.of12 >= 0 {
			if got := KeyPartition([]byte(c.key), 12); got != c.of12 {
				t.Errorf("KeyPartition(%q, 12) = %d, Java gives %d", c.key, got, c.of12)
			}
		}
	}
}
