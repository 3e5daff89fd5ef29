package rack

// PartitionsMoved counts the partitions of after whose member is not the one
// that had them in before: what a rebalance from before to after stops on
// one member and starts on another. A partition nobody had in before counts
// (someone starts reading it); one that after no longer lists does not.
// Both map member IDs to their partitions, as PlanResult.Assignments does.
func PartitionsMoved(before, after map[string][]TopicPartition) int {
	owner := make(map[TopicPartition]string)
	for m, tps := range before {
		for _, tp := range tps {
			owner[tp] = m
		}
	}
	moved := 0
	for m, tps := range after {
		for _, tp := range tps {
			if o, ok := owner[tp]; !ok || o != m {
				moved++
			}
		}
	}
	return moved
}
