// Package producer writes records to Kafka through kafka-go's protocol
// package, as the job's fetch client reads them: kafka-go's Writer has no
// idempotence and no rack.
//
// Guarantee: within one Producer, a record is written at most once however
// often its request is retried (idempotence, KIP-98: a producer id and epoch
// from InitProducerId, a sequence number per partition, one batch in flight
// per partition), and in order per partition. A Produce call that returns an
// error may have written some of its records; calling it again with the same
// records can write those twice. Across processes nothing is deduplicated:
// a new Producer has a new producer id.
//
// With a TransactionalID the guarantee is the transaction's (txn.go,
// KIP-98 and KIP-447): records and a group's offsets sent between BeginTxn
// and CommitTxn become visible to read_committed consumers, and the
// group's, together and once; after AbortTxn, or a crash, none of them
// does. A producer started later with the same id fences this one.
//
// Keyless records go to a sticky partition (KIP-794) chosen, with
// RackAware, among the partitions whose leader is in the producer's rack
// (KIP-1123), so produced bytes stay in the zone; keyed records go where the
// Java client sends them (murmur2).
//
// # One connection layer, later
//
// The fetch client (pipeline/fetch: brokers.go, session_conn.go) keeps its
// own broker pool, metadata and authenticated connections; this package
// keeps another, and takes its connections from a dial function the caller
// gives (the job passes fetch.SessionDial, so TLS, SASL and the KIP-368
// session renewal are the fetch side's own). Both should become one room
// below the job and the sinks (internal/kafka/broker, say): the brokerConn,
// the dial with TLS/SASL/re-authentication, the metadata cache with its
// single-flight lookups and the racks of brokers, used by the fetch client,
// the group member and this producer alike, as franz-go keeps one broker
// pool for its consumer, group and producer. This package's conn.go and
// metadata.go are what would move there; the fetch package is left alone
// for now because the group member is being built on top of it.
package producer
