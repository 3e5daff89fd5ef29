package pipeline

import "context"

// leftoverRemover is a sink whose writes a crash can leave half done on
// its store (temporary files, unfinished uploads): sink.Files and the
// table sink, through its files.
type leftoverRemover interface {
	RemoveLeftovers(ctx context.Context, topic string, partition int) int
}

// removeLeftovers removes, as the member takes a partition of the group
// and before its worker writes, what a dead writer left half done for it:
// the member is now the partition's only writer (see sink/leftovers.go).
// A replay does not: it writes below its prefix while the group may run.
func (j *Job) removeLeftovers(ctx context.Context, topic string, partition int) {
	for _, s := range j.sinks {
		if r, ok := s.(leftoverRemover); ok {
			r.RemoveLeftovers(ctx, topic, partition)
		}
	}
}
