package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"

	"github.com/logstore/logstore/sink"
)

// A cut mark with the files' layout reads
//
//	cut:<last> layout:<fingerprint> <layout>
//
// where <layout> is the files sink's FileLayout as JSON and <fingerprint>
// the first 12 hex digits of its SHA-256. The layout decides names and
// folders, so a batch re-cut after a config change is written with the
// layout it was cut with, and the names do not change under it. A mark of
// an older version ("cut:<last>" alone) re-cuts with the current layout.
const layoutInMark = " layout:"

// maxMarkBytes keeps a mark under the broker's offset.metadata.max.bytes
// (4096 by default); a longer layout is recorded by fingerprint alone.
const maxMarkBytes = 3072

// fingerprint names a layout in marks and logs.
func fingerprint(layout string) string {
	sum := sha256.Sum256([]byte(layout))
	return hex.EncodeToString(sum[:6])
}

// markOf is the commit metadata of a cut at last under layout ("" when
// there is no files sink).
func markOf(last int64, layout string) string {
	m := cutPrefix + strconv.FormatInt(last, 10)
	if layout == "" {
		return m
	}
	m += layoutInMark + fingerprint(layout)
	if full := m + " " + layout; len(full) <= maxMarkBytes {
		return full
	}
	return m
}

// parseMark reads a mark: the pending cut (-1 for none), the layout it was
// cut with ("" when the mark does not hold it) and its fingerprint.
func parseMark(meta string) (cut int64, layout, fp string) {
	head, rest, _ := strings.Cut(meta, layoutInMark)
	if cut = parseCut(head); cut < 0 {
		return -1, "", ""
	}
	fp, layout, _ = strings.Cut(rest, " ")
	if layout != "" && fingerprint(layout) != fp {
		layout = "" // not what was written: use the current layout
	}
	return cut, layout, fp
}

// layoutSink is a sink whose names depend on a layout (sink.Files).
type layoutSink interface {
	WithLayout(layout string) (*sink.Files, error)
}

// layoutSinks is the sinks and dead-letter writers for one layout.
type layoutSinks struct {
	layout string
	sinks  []sink.Sink
	dead   []deadLetterWriter
}

// batchLayout is the layout of the open batch: the pending cut's, when its
// mark recorded another, else the current one.
func (w *worker) batchLayout() string {
	if w.cut >= 0 && w.cutLayout != "" {
		return w.cutLayout
	}
	return w.layout
}

// withLayout is the worker's sinks and dead-letter writers, those that
// name files writing under layout (the current one: as they are). The
// same layout gives the same sinks, so what was staged into them is there
// when the batch is written.
func (w *worker) withLayout(layout string) ([]sink.Sink, []deadLetterWriter, error) {
	if layout == w.layout {
		return w.sinks, w.dead, nil
	}
	if w.other != nil && w.other.layout == layout {
		return w.other.sinks, w.other.dead, nil
	}
	sinks := slices.Clone(w.sinks)
	for i, s := range sinks {
		if ls, ok := s.(layoutSink); ok {
			f, err := ls.WithLayout(layout)
			if err != nil {
				return nil, nil, errFatal{err}
			}
			sinks[i] = f
		}
	}
	dead := slices.Clone(w.dead)
	for i, d := range dead {
		if fd, ok := d.(fileDeadLetters); ok {
			f, err := fd.files.WithLayout(layout)
			if err != nil {
				return nil, nil, errFatal{err}
			}
			dead[i] = fileDeadLetters{f}
		}
	}
	w.other = &layoutSinks{layout: layout, sinks: sinks, dead: dead}
	return sinks, dead, nil
}
