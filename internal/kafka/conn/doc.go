// Package conn is the one connection layer below every client of the Kafka
// protocol in logstore: the fetch client (pipeline/fetch), the group
// member (pipeline/group) and the producer (internal/kafka/producer) each
// keep their own protocol above it and share, here:
//
//   - the dial (Dial): a kafka.Dialer's address resolution, TLS and SASL,
//     API versions negotiated once, and the SASL session renewed in place
//     between two requests when due (KIP-368); SessionDial lends the same
//     renewal to kafka-go's own connections (its Transport);
//   - the connection (Conn): one request at a time, decoded by kafka-go's
//     protocol package, raw for answers it misreads, or encoded by the
//     caller or by kmsg for requests it does not know; Stale tells a
//     pooled connection that outlived its broker from a broker that fails;
//   - the bootstrap path (FirstAnswer, Seeds, Nodes): the brokers the last
//     metadata named, then the seeds dialled by name, so a cluster that
//     came back at other addresses is found again (rebootstrap);
//   - the coordinator of a group or a transactional id (Find, Coordinator):
//     found, kept, dropped when a request fails and forgotten when it moved;
//   - the retry policy (Backoff), a doubling wait each client sets.
//
// It sits in internal/kafka beside the producer, not in pipeline, because
// the job (pipeline, pipeline/group, pipeline/fetch) and the sink
// (internal/kafka/producer through sink) both need it and neither may
// import the other.
package conn
