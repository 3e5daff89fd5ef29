// Package wire holds the group member's hand-written wire formats, apart
// from the member's states and transitions (package group): the classic
// consumer protocol's subscription and assignment (Java's
// ConsumerProtocolSubscription and ConsumerProtocolAssignment) and the
// answers kafka-go reads no further than their error code, and the
// next-generation protocol's ConsumerGroupHeartbeat and OffsetCommit v9
// (KIP-848), which kafka-go does not know. Every codec is checked against
// franz-go's kmsg, generated from Kafka's own message definitions.
package wire
