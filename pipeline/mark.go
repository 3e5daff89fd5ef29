package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/logstore/logstore/sink"
)

// A cut mark reads
//
//	cut:<last> topic:<id> layout:<fingerprint> <layout>
//
// where <id> is Kafka's id of the topic the batch was read from (KIP-516;
// absent when the brokers keep none), <layout> the files sink's FileLayout
// as JSON and <fingerprint> the first 12 hex digits of its SHA-256. The
// layout decides names and folders, so a batch re-cut after a config change
// is written with the layout it was cut with, and the names do not change
// under it; the id tells a mark of a topic deleted and created again under
// the same name from one of the topic read now. A mark of an older version
// ("cut:<last>", with or without the layout) re-cuts with the current
// topic, and with the current layout when it holds none.
const (
	topicInMark  = " topic:"
	layoutInMark = " layout:"
)

// maxMarkBytes keeps a mark under the broker's offset.metadata.max.bytes
// (4096 by default); a longer layout is recorded by fingerprint alone.
const maxMarkBytes = 3072

// fingerprint names a layout in marks and logs.
func fingerprint(layout string) string {
	sum := sha256.Sum256([]byte(layout))
	return hex.EncodeToString(sum[:6])
}

// markOf is the commit metadata of a cut at last of the topic topicID
// ("" when unknown) under layout ("" when there is no files sink).
func markOf(last int64, topicID, layout string) string {
	m := cutPrefix + strconv.FormatInt(last, 10)
	if topicID != "" {
		m += topicInMark + topicID
	}
	if layout == "" {
		return m
	}
	m += layoutInMark + fingerprint(layout)
	if full := m + " " + layout; len(full) <= maxMarkBytes {
		return full
	}
	return m
}

// cutMark is a parsed mark.
type cutMark struct {
	Last        int64  // the pending cut, -1 for none
	TopicID     string // the topic it was cut from; "" when not recorded
	Layout      string // the layout it was cut with; "" when the mark does not hold it
	Fingerprint string // the layout's fingerprint; "" when none was recorded
}

// parseMark reads a mark.
func parseMark(meta string) cutMark {
	head, rest, _ := strings.Cut(meta, layoutInMark)
	head, topic, _ := strings.Cut(head, topicInMark)
	m := cutMark{Last: parseCut(head), TopicID: topic}
	if m.Last < 0 {
		return cutMark{Last: -1}
	}
	m.Fingerprint, m.Layout, _ = strings.Cut(rest, " ")
	if m.Layout != "" && fingerprint(m.Layout) != m.Fingerprint {
		m.Layout = "" // not what was written: use the current layout
	}
	return m
}

// at is the position of a group or output at offset with this mark.
func (m cutMark) at(offset int64) position {
	return position{Offset: offset, Cut: m.Last, Layout: m.Layout, Fingerprint: m.Fingerprint, TopicID: m.TopicID}
}

// checkCutLayout stops a re-cut whose mark names its layout by fingerprint
// alone (a layout too long for the mark) when that is not the current
// layout: the layout it was cut with is unknown, and re-cutting under the
// current one would write other names beside the files already stored.
func checkCutLayout(topic string, partition int, pos position, layout string) error {
	if pos.Cut < 0 || pos.Layout != "" || pos.Fingerprint == "" || layout == "" || pos.Fingerprint == fingerprint(layout) {
		return nil
	}
	return errFatal{fmt.Errorf("%s/%d: the pending cut %d-%d was made with files layout %s, recorded by its fingerprint alone (its JSON is over %d bytes), "+
		"and sinks.files now gives layout %s: restore the partition_by, max_file_bytes and parquet settings it was cut with so the batch is written "+
		"again under the same names, then change them", topic, partition, pos.Offset, pos.Cut, pos.Fingerprint, maxMarkBytes, fingerprint(layout))}
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
