package start

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// A cut mark is the commit metadata of a batch cut but not yet confirmed
// by every output:
//
//	cut:<last> topic:<id> layout:<fingerprint> <layout>
//
// "the batch from this offset ends at offset last; cut it there again".
// <id> is Kafka's id of the topic the batch was read from (KIP-516;
// absent when the brokers keep none), <layout> the files sink's
// FileLayout as JSON and <fingerprint> the first 12 hex digits of its
// SHA-256. The layout decides names and folders, so a batch re-cut after a
// config change is written with the layout it was cut with, and the names
// do not change under it; the id tells a mark of a topic deleted and
// created again under the same name from one of the topic read now. A mark
// of an older version ("cut:<last>", with or without the layout) re-cuts
// with the current topic, and with the current layout when it holds none.
const (
	cutPrefix    = "cut:"
	topicInMark  = " topic:"
	layoutInMark = " layout:"
)

// MaxMarkBytes keeps a mark under the broker's offset.metadata.max.bytes
// (4096 by default); a longer layout is recorded by fingerprint alone.
const MaxMarkBytes = 3072

// Fingerprint names a layout in marks, resume records and logs.
func Fingerprint(layout string) string {
	sum := sha256.Sum256([]byte(layout))
	return hex.EncodeToString(sum[:6])
}

// MarkOf is the commit metadata of a cut at last of the topic topicID
// ("" when unknown) under layout ("" when there is no files sink).
func MarkOf(last int64, topicID, layout string) string {
	m := cutPrefix + strconv.FormatInt(last, 10)
	if topicID != "" {
		m += topicInMark + topicID
	}
	if layout == "" {
		return m
	}
	m += layoutInMark + Fingerprint(layout)
	if full := m + " " + layout; len(full) <= MaxMarkBytes {
		return full
	}
	return m
}

// Mark is a parsed cut mark.
type Mark struct {
	Last        int64  // the pending cut, -1 for none
	TopicID     string // the topic it was cut from; "" when not recorded
	Layout      string // the layout it was cut with; "" when the mark does not hold it
	Fingerprint string // the layout's fingerprint; "" when none was recorded
}

// ParseMark reads commit metadata; anything that is not a cut mark
// (another tool's metadata, a commit time) is no pending cut.
func ParseMark(meta string) Mark {
	head, rest, _ := strings.Cut(meta, layoutInMark)
	head, topic, _ := strings.Cut(head, topicInMark)
	m := Mark{Last: parseCut(head), TopicID: topic}
	if m.Last < 0 {
		return Mark{Last: -1}
	}
	m.Fingerprint, m.Layout, _ = strings.Cut(rest, " ")
	if m.Layout != "" && Fingerprint(m.Layout) != m.Fingerprint {
		m.Layout = "" // not what was written: use the current layout
	}
	return m
}

func parseCut(meta string) int64 {
	if !strings.HasPrefix(meta, cutPrefix) {
		return -1
	}
	b, err := strconv.ParseInt(meta[len(cutPrefix):], 10, 64)
	if err != nil || b < 0 {
		return -1
	}
	return b
}

// At is the position of a group or output at offset with this mark.
func (m Mark) At(offset int64) Position {
	return Position{Offset: offset, Cut: m.Last, Layout: m.Layout, Fingerprint: m.Fingerprint, TopicID: m.TopicID}
}

// Position is where a partition stands in the group, or where it starts.
type Position struct {
	Offset int64 // next offset to read; -1 when the group never committed
	Cut    int64 // the last offset of a pending cut mark, or -1
	// Layout is the files' layout the pending cut was made with; "" when
	// none is recorded, or by Fingerprint alone.
	Layout      string
	Fingerprint string
	// TopicID is Kafka's id of the topic the pending cut was read from;
	// "" when the mark does not say.
	TopicID string
}

// None is the position of a group that never committed.
var None = Position{Offset: -1, Cut: -1}

// A transaction's commit of a batch's next offset carries the batch's
// first offset after the commit time: "at:<Unix ms> from:<first>". A
// table that commits after the transaction lacks at most that batch.
const fromInMeta = " from:"

// WithFrom is commit metadata meta with the batch's first offset.
func WithFrom(meta string, first int64) string {
	return meta + fromInMeta + strconv.FormatInt(first, 10)
}

// FromOf is the batch's first offset in commit metadata; nil when it
// holds none.
func FromOf(meta string) *int64 {
	_, v, ok := strings.Cut(meta, fromInMeta)
	if !ok {
		return nil
	}
	v, _, _ = strings.Cut(v, " ")
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return nil
	}
	return &n
}
