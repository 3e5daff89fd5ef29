package conn

import "time"

// Backoff is the retry policy of every Kafka client here: the wait starts
// at Min and doubles up to Max (Max wins over a larger Min); Reset starts
// over after an answer. The clients differ only in the two numbers (a
// coordinator still writing a transaction's markers answers in
// milliseconds; a group coordinator that lost its broker in seconds; a
// preferred read replica that failed is left alone for seconds to
// minutes).
type Backoff struct {
	Min, Max time.Duration
	next     time.Duration
}

// Next is the wait before the next try.
func (b *Backoff) Next() time.Duration {
	if b.next == 0 {
		b.next = b.Min
	}
	d := min(b.next, b.Max)
	b.next = min(2*b.next, b.Max)
	return d
}

// Reset starts the waits over.
func (b *Backoff) Reset() { b.next = 0 }
