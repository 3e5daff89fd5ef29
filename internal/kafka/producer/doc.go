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
// # Below it
//
// Its connections, its bootstrap (the brokers the last metadata named,
// then the seeds) and its transaction and group coordinators are package
// conn's, shared with the fetch client and the group member; this package
// keeps the producing above them. It dials through the function its caller
// gives (the job passes conn.SessionDial, so TLS, SASL and the KIP-368
// session renewal are the same as the readers'), so sink imports it without
// importing pipeline.
package producer
