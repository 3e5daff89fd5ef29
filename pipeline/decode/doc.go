// Package decode turns a record.Record into a sink.Row as the `schema`
// section says: columns from JSON paths, Kafka fields and headers, parsed
// times, CEL expressions and a CEL filter. It knows nothing of Kafka clients,
// batches or offsets.
package decode
