package fetch

import "time"

// Defaults of ReaderConfig.ReplicaBackoff and ReplicaBackoffMax.
const (
	DefaultReplicaBackoff    = time.Second
	DefaultReplicaBackoffMax = 30 * time.Second
)

// replicaBackoff is how long a reader reads from the leader alone after its
// preferred read replica failed, before it sends its rack again and lets the
// leader name a replica. The first wait is short, because the usual cause is
// a broker restarting in a rolling upgrade, back within seconds; each failure
// in a row doubles it up to max, so a replica that stays broken costs a few
// failed fetches an hour; a fetch the replica serves starts over. The leader
// stays the authority: the reader only asks again, and the leader names the
// replica only when it is alive and caught up (KIP-392).
type replicaBackoff struct {
	first, max time.Duration
	next       time.Duration // 0: no failure since the last success
}

// failed returns how long to read from the leader alone after a failure.
func (b *replicaBackoff) failed() time.Duration {
	if b.next <= 0 {
		b.next = b.first
	}
	wait := min(b.next, b.max)
	b.next = min(2*b.next, b.max)
	return wait
}

// served starts over after the replica answered a fetch.
func (b *replicaBackoff) served() { b.next = 0 }
