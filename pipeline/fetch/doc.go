// Package fetch is logstore's Kafka fetch client, on kafka-go's protocol
// package (Fetch v11: kafka-go encodes up to v11, Kafka 4 serves v4 to v17).
//
// A PartitionReader reads one partition: it sends the reader's rack,
// follows the preferred read replica the leader names (KIP-392), falls back
// to the leader when that replica fails and asks for it again after a short
// backoff, checks for log truncation after a leadership change (KIP-320),
// drops aborted transactions under read_committed, and hands out
// record.Record values. It knows nothing of groups, offset commits or sinks.
//
// Under the readers of a member is one Client, the member's connection
// layer, kept across group generations: per broker one control connection
// (metadata, ListOffsets, OffsetForLeaderEpoch) and one fetch session. A
// reader decides alone which broker to fetch from and with which rack; the
// session of that broker gathers every reader waiting on it into one Fetch
// with an incremental fetch session (KIP-227) and gives each its partition's
// part of the answer. Why: a reader per connection sent one Fetch per
// partition per max_wait, so a caught-up member with 600 partitions sent
// 1,200 requests a second and opened over a thousand connections (TLS and
// SASL handshakes each, which MSK rate-limits) at every rebalance; with the
// Client it sends about 2 per broker, naming no partition while nothing
// changes, over 2 connections per broker (figures in BENCHMARKS.md).
//
// A partition is in a Fetch only while its reader waits in Fetch, as in the
// Java consumer: a partition left in the session while its reader is busy
// would make the broker answer at once, again and again, with records nobody
// takes. After answering a round the session waits up to 10 ms for the
// readers it answered to ask again, so that an idle member's partitions
// stay in one Fetch instead of splitting over two. A reader the broker had
// nothing for is answered once it has waited max_wait, as by a long poll,
// not by every round: rounds are cut short while a reader answered with
// records is away, and each used to wake every idle reader. The rack is a
// field of the request, and a leader that is sent one names a replica instead of
// serving records, so a reader that falls back to the leader for a backoff
// fetches through a second session of that broker, without the rack. A
// session the broker lost or fenced (FETCH_SESSION_ID_NOT_FOUND,
// INVALID_FETCH_SESSION_EPOCH) starts over with a full Fetch at once; a
// broker out of session slots is fetched from without one.
//
// Its connections are internal/kafka/conn's, as the group member's and
// the producer's are: each renews its SASL session in place before it
// expires (KIP-368), and one that fails at once after a broker restart is
// dialled again before the broker counts as failed. Stats counts every
// fetched byte by broker rack, every Fetch request and every connection
// opened.
package fetch
