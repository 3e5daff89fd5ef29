package fetch

import "time"

// Defaults of ReaderConfig.ReplicaBackoff and ReplicaBackoffMax: how long
// a reader reads from the leader alone after its preferred read replica
// failed, before it sends its rack again and lets the leader name a
// replica (a conn.Backoff). The first wait is short, because the usual
// cause is a broker restarting in a rolling upgrade, back within seconds;
// each failure in a row doubles it up to the max, so a replica that stays
// broken costs a few failed fetches an hour; a fetch the replica serves
// starts over. The leader stays the authority: the reader only asks
// again, and the leader names the replica only when it is alive and
// caught up (KIP-392).
const (
	DefaultReplicaBackoff    = time.Second
	DefaultReplicaBackoffMax = 30 * time.Second
)
