// Package conn is what every client of the Kafka protocol in logstore
// shares below its own protocol: finding the broker that coordinates a
// group or a transactional id, keeping one connection to it and dropping
// it when the coordinator moves, and the one retry policy (a doubling
// backoff) those clients wait by.
//
// It sits in internal/kafka beside the producer, not in pipeline, because
// the job (pipeline, pipeline/group) and the sink (internal/kafka/producer
// through sink) both need it and neither may import the other. It knows
// no connection type of its own: each client dials its own (the fetch
// client's session connection, the producer's), so TLS, SASL and SASL
// re-authentication stay in the dial the client is given.
package conn
