package worker

import (
	"slices"

	"github.com/logstore/logstore/sink"
)

// layoutSink is a sink whose names depend on a layout (sink.Files).
type layoutSink interface {
	WithLayout(layout string) (*sink.Files, error)
}

// layoutSinks is the sinks and dead-letter writers for one layout.
type layoutSinks struct {
	layout string
	sinks  []sink.Sink
	dead   []DeadLetterWriter
}

// batchLayout is the layout of the open batch: the pending cut's, when its
// mark recorded another, else the current one.
func (w *Worker) batchLayout() string {
	if w.cut >= 0 && w.cutLayout != "" {
		return w.cutLayout
	}
	return w.Layout
}

// withLayout is the worker's sinks and dead-letter writers, those that
// name files writing under layout (the current one: as they are). The
// same layout gives the same sinks, so what was staged into them is there
// when the batch is written.
func (w *Worker) withLayout(layout string) ([]sink.Sink, []DeadLetterWriter, error) {
	if layout == w.Layout {
		return w.Sinks, w.Dead, nil
	}
	if w.other != nil && w.other.layout == layout {
		return w.other.sinks, w.other.dead, nil
	}
	sinks := slices.Clone(w.Sinks)
	for i, s := range sinks {
		if ls, ok := s.(layoutSink); ok {
			f, err := ls.WithLayout(layout)
			if err != nil {
				return nil, nil, FatalError{err}
			}
			sinks[i] = f
		}
	}
	dead := slices.Clone(w.Dead)
	for i, d := range dead {
		if fd, ok := d.(FileDeadLetters); ok {
			f, err := fd.Files.WithLayout(layout)
			if err != nil {
				return nil, nil, FatalError{err}
			}
			dead[i] = FileDeadLetters{f}
		}
	}
	w.other = &layoutSinks{layout: layout, sinks: sinks, dead: dead}
	return sinks, dead, nil
}
