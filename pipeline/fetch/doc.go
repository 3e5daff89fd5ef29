// Package fetch is logstore's Kafka fetch client. A PartitionReader reads one
// partition with Fetch v11 through kafka-go's protocol package: it sends the
// reader's rack, follows the preferred read replica the leader names
// (KIP-392), falls back to the leader when that replica fails and asks for
// it again after a short backoff, redials a connection that outlived a
// broker restart, checks for log truncation after a leadership change
// (KIP-320), renews SASL sessions in place (KIP-368), and counts every
// fetched byte by broker rack (Stats). SessionDial lends the same session
// renewal to kafka-go's connections (GroupDialer for the group, and the
// Transport's Dial). It hands out record.Record values
// and knows nothing of groups, offset commits or sinks.
package fetch
