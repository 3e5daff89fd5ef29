package sink

import (
	"context"
	"fmt"
	"time"
)

// Type is a column type as the config spells it.
type Type string

// The column types. Each lists the Go type a Row holds for it.
const (
	String    Type = "string"             // string
	Int32     Type = "int32"              // int32
	Int64     Type = "int64"              // int64
	Float32   Type = "float32"            // float32
	Float64   Type = "float64"            // float64
	Bool      Type = "bool"               // bool
	Timestamp Type = "timestamp"          // time.Time (UTC); Field.Unit says ms or us
	Date      Type = "date"               // time.Time, midnight UTC of the day
	Bytes     Type = "bytes"              // []byte
	JSON      Type = "json"               // string holding a raw JSON document
	StringMap Type = "map<string,string>" // map[string]string
)

// Types lists every column type, in the order the docs give them.
var Types = []Type{String, Int32, Int64, Float32, Float64, Bool, Timestamp, Date, Bytes, JSON, StringMap}

// Valid reports whether t is one of Types.
func (t Type) Valid() bool {
	for _, k := range Types {
		if k == t {
			return true
		}
	}
	return false
}

// Field is one output column.
type Field struct {
	Name     string
	Type     Type
	Unit     time.Duration // Timestamp only: time.Millisecond or time.Microsecond
	Required bool          // not null in the file schema
}

// Schema is the ordered set of output columns.
type Schema struct {
	Fields []Field
}

// Index returns the position of the named field, or -1.
func (s *Schema) Index(name string) int {
	for i, f := range s.Fields {
		if f.Name == name {
			return i
		}
	}
	return -1
}

// Row is one output row: Row[i] is the value of Schema.Fields[i], nil for null.
type Row []any

// Source names the Kafka record a row came from.
type Source struct {
	Offset    int64
	Key       []byte
	Value     []byte // the original record value, for `value: original` and dead letters
	Timestamp time.Time
}

// Batch is the unit of work between the pipeline and the sinks: the decoded
// rows of one partition's records First..Last (inclusive offsets). Rows and
// Sources are parallel: Sources[i] is where Rows[i] came from. Name parts are
// deterministic so that writing the same batch again overwrites.
type Batch struct {
	Topic     string
	Partition int
	First     int64 // the committed offset the batch starts from
	Last      int64 // the cut: last offset covered (records may be absent, e.g. filtered)
	Schema    *Schema
	Rows      []Row
	Sources   []Source
	// Staged is how many of the batch's rows earlier Stage calls took; Rows
	// are the ones after them. A sink that kept part of a failed Stage
	// skips what it already has when the call is repeated.
	Staged int
	// Prefix is prepended to every object name, e.g.
	// "_backfill/20261129T060000Z_20261129T070000Z/" for a backfill, or
	// "replay/20261129T0700Z-…/" for a replay, that must not touch the main
	// output.
	Prefix string
	// TopicID is Kafka's id of the topic (KIP-516), "" when the brokers
	// keep none: a topic deleted and created again has another, and numbers
	// its records from 0 again. A table keeps it beside its positions.
	TopicID string
	// ValidText says every string in Rows (string, json and map columns) is
	// valid UTF-8 already, as the decoder's rows are: the Files sink then
	// does not check each again. Left false, the sink makes any invalid
	// sequence U+FFFD itself.
	ValidText bool
	// Held is what the exactly-once Kafka output staged of the batch
	// before its cut (Kafka.TakeHeld): its transaction produces those
	// records first, then Rows. nil: none.
	Held *KafkaHeld
	// KafkaFrom is where the exactly-once Kafka output's own position
	// stands when the partition was read again from behind it for its
	// other outputs: it stages no row of an earlier record (it holds
	// them). 0: every row.
	KafkaFrom int64
}

// Name is the deterministic base name of the batch, without extension:
// {topic}-{partition}-{first}-{last}.
func (b *Batch) Name() string {
	return fmt.Sprintf("%s-%d-%d-%d", b.Topic, b.Partition, b.First, b.Last)
}

// Sink receives whole batches. Write returns only once the batch is durable
// in the sink (its guarantee says in what sense); the pipeline commits the
// batch's offsets only after every sink returned nil. Writing the same batch
// twice must be safe.
//
// Rows are lent, not given: neither Write nor Stage may keep b.Rows, a row
// or a value taken from one (a string's header, a time) after it returns,
// nor write into them. The pipeline reuses a row's storage, and that of its
// numbers, strings and times, once the batch lets go of it, and shares one
// map among the rows that repeat a JSON object. What a sink keeps, it
// copies; a string's text may be kept (it is never reused).
type Sink interface {
	Write(ctx context.Context, b *Batch) error
	Close() error
}

// Stager is a Sink that takes an open batch's rows before the cut, so a
// batch's size is not bounded by memory: the pipeline stages rows as they
// are decoded and drops them, and Write, at the cut, takes the rest and
// makes the whole batch durable. Stage, like Write, is retried until it
// succeeds.
type Stager interface {
	Sink
	// Stage takes rows of the open batch that starts at b.First (b.Last is
	// not known yet). full reports that the batch's output reached the size
	// the sink aims for: the batch should be cut.
	Stage(ctx context.Context, b *Batch) (full bool, err error)
	// Discard drops what was staged for the partition's open batch and not
	// written; whoever reads the batch again stages it again.
	Discard(topic string, partition int, prefix string)
}

// MemoryHolder is a Stager that keeps some staged rows in memory until
// the batch is written: a sorted file's run (sinks.iceberg.sort_by), up
// to 16 MiB an open file. The job counts those bytes in
// batch.memory_budget as it counts rows it holds itself, and cuts the
// batch to give them back when the budget is spent.
type MemoryHolder interface {
	Stager
	// HeldBytes is about what the open batch's staged rows still hold in
	// memory.
	HeldBytes(topic string, partition int, prefix string) int64
}
