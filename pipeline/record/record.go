// Package record is what the fetch client hands to the decoder and the job:
// one Kafka record of one partition, with nothing of the wire left in it.
package record

import (
	"time"

	"github.com/segmentio/kafka-go/protocol"
)

// Header is a record header. It is kafka-go's own type, so headers pass from
// the fetch response to producers and dead letters without a copy.
type Header = protocol.Header

// Record is one record of a partition. Key and Value are nil when the
// record has none (a null key, a tombstone) and non-nil, possibly empty,
// when it has one: empty is not null. The same holds for header values.
// Headers is nil when the record has no headers.
type Record struct {
	Topic     string
	Partition int
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []Header
	Time      time.Time
}
