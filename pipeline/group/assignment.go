package group

import "slices"

// Assignment is partitions by topic, each list ascending.
type Assignment map[string][]int

// Count is the number of partitions.
func (a Assignment) Count() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// Has says whether a holds topic/partition.
func (a Assignment) Has(topic string, partition int) bool {
	_, ok := slices.BinarySearch(a[topic], partition)
	return ok
}

// Minus is the partitions of a that b does not hold.
func (a Assignment) Minus(b Assignment) Assignment {
	out := Assignment{}
	for t, ps := range a {
		for _, p := range ps {
			if !b.Has(t, p) {
				out[t] = append(out[t], p)
			}
		}
	}
	return out
}

// Clone is a deep copy, sorted.
func (a Assignment) Clone() Assignment {
	out := make(Assignment, len(a))
	for t, ps := range a {
		if len(ps) > 0 {
			out[t] = slices.Sorted(slices.Values(ps))
		}
	}
	return out
}
