// Package fetch is logstore's Kafka fetch client. A PartitionReader reads one
// partition with Fetch v11 through kafka-go's protocol package: it sends the
// reader's rack, follows the preferred read replica the leader names
// (KIP-392), falls back to the leader when that replica fails, and counts
// every fetched byte by broker rack (Stats). It hands out record.Record
// values and knows nothing of groups, offset commits or sinks.
package fetch
