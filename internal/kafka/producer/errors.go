package producer

import (
	"errors"
	"fmt"
)

// ErrClosed is the error of records still queued when the Producer closed.
var ErrClosed = errors.New("producer closed")

// RecordError is one record a Produce call could not write: its index in
// the call's records, the partition it was for, and why.
type RecordError struct {
	Index     int
	Partition int32
	Err       error
}

// Error is what Produce returns when some records were not written (the
// others were). errors.Is sees every record's error, so a caller asks
// errors.Is(err, kafka.MessageSizeTooLarge).
type Error struct {
	Topic   string
	Total   int
	Records []RecordError // by Index
}

func (e *Error) Error() string {
	first := e.Records[0]
	return fmt.Sprintf("producing to %q: %d of %d records failed, the first (record %d, partition %d): %v",
		e.Topic, len(e.Records), e.Total, first.Index, first.Partition, first.Err)
}

func (e *Error) Unwrap() []error {
	errs := make([]error, len(e.Records))
	for i, r := range e.Records {
		errs[i] = r.Err
	}
	return errs
}
