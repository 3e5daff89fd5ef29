package producer

// murmur2 is the hash the Java client's default partitioner takes of a
// record key (Utils.murmur2): a keyed record must land on the partition a
// Java producer would pick, or consumers that rely on key order see one key
// in two partitions.
func murmur2(data []byte) int32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	n := len(data)
	h := seed ^ uint32(n)
	i := 0
	for ; i+4 <= n; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	switch n - i {
	case 3:
		h ^= uint32(data[i+2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[i+1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[i])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// KeyPartition is the partition, of n, the Java client's default
// partitioner gives a record with key: murmur2, made positive by masking
// the sign bit (Utils.toPositive), modulo n.
func KeyPartition(key []byte, n int) int32 {
	return (murmur2(key) & 0x7fffffff) % int32(n)
}
