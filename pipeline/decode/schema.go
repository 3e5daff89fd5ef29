package decode

import (
	"fmt"
	"strings"

	"github.com/logstore/logstore/sink"
)

// SchemaConfig is the `schema` section: how a record becomes a row. It is the
// part of a Spark job that parsed `value` with from_json, picked columns,
// filtered and added columns; pipeline/decode/reference-schema.yaml documents every
// key.
type SchemaConfig struct {
	// Format is json (the value is one JSON object) or text (the value is one
	// string, read with source `value`).
	Format string `yaml:"format"`
	// Columns are the output columns, in file order. Without them a row is
	// the Kafka record: key, value, topic, partition, offset, timestamp,
	// headers.
	Columns []ColumnConfig `yaml:"columns"`
	// Where is a CEL expression over the columns; a record for which it is
	// false (or null) is dropped without being a dead letter.
	Where string `yaml:"where"`
}

// ColumnConfig is one entry of `schema.columns`.
type ColumnConfig struct {
	Name string    `yaml:"name"`
	Type sink.Type `yaml:"type"`
	// Unit is the precision of a timestamp column: ms (default) or us.
	Unit string `yaml:"unit"`
	// Source is where the value comes from: a JSON path (default: the column
	// name), `value` in text format, or kafka.key, kafka.value, kafka.topic,
	// kafka.partition, kafka.offset, kafka.timestamp, kafka.headers,
	// kafka.header.NAME.
	Source string `yaml:"source"`
	// Required makes a record without the value (or with null) a dead letter.
	Required bool `yaml:"required"`
	// Default is the value of a missing or null field.
	Default any `yaml:"default"`
	// TimeFormat is how a timestamp or date column is spelled: rfc3339
	// (timestamp default), epoch_s, epoch_ms, epoch_us, epoch_ns, or a Go
	// layout ("2006-01-02", the date default).
	TimeFormat string `yaml:"time_format"`
	// Expr derives the column with CEL from the columns before it (and the
	// decoded ones after it); it replaces source.
	Expr string `yaml:"expr"`
}

// SetDefaults fills the zero fields.
func (c *SchemaConfig) SetDefaults() {
	if c.Format == "" {
		c.Format = "json"
	}
	if len(c.Columns) == 0 {
		c.Columns = kafkaColumns(c.Format)
	}
	for i := range c.Columns {
		col := &c.Columns[i]
		if col.Source == "" && col.Expr == "" {
			if c.Format == "text" {
				col.Source = "value"
			} else {
				col.Source = col.Name
			}
		}
		switch col.Type {
		case sink.Timestamp:
			if col.Unit == "" {
				col.Unit = "ms"
			}
			if col.TimeFormat == "" {
				col.TimeFormat = "rfc3339"
			}
		case sink.Date:
			if col.TimeFormat == "" {
				col.TimeFormat = dateLayout
			}
		}
	}
}

// kafkaColumns is the schema without `columns`: the record as Spark's Kafka
// source gives it (rowKafkaDF), the value kept whole.
func kafkaColumns(format string) []ColumnConfig {
	value := ColumnConfig{Name: "value", Type: sink.JSON, Source: "kafka.value", Required: true}
	if format == "text" {
		value = ColumnConfig{Name: "value", Type: sink.String, Source: "value", Required: true}
	}
	return []ColumnConfig{
		{Name: "key", Type: sink.String, Source: "kafka.key"},
		value,
		{Name: "topic", Type: sink.String, Source: "kafka.topic", Required: true},
		{Name: "partition", Type: sink.Int32, Source: "kafka.partition", Required: true},
		{Name: "offset", Type: sink.Int64, Source: "kafka.offset", Required: true},
		{Name: "timestamp", Type: sink.Timestamp, Source: "kafka.timestamp"},
		{Name: "headers", Type: sink.StringMap, Source: "kafka.headers"},
	}
}

// Validate checks the section, including compiling its CEL expressions;
// errors are *confkey.Error naming the key below `schema`.
func (c *SchemaConfig) Validate() error {
	_, err := newDecoder(c)
	return err
}

// sourceKind is where a column's value comes from.
type sourceKind uint8

const (
	srcPath sourceKind = iota
	srcValue
	srcKey
	srcTopic
	srcPartition
	srcOffset
	srcTimestamp
	srcHeader
	srcHeaders
	srcExpr
)

// kafkaSources are the record fields a source can name, as Spark's Kafka
// source calls its columns.
var kafkaSources = map[string]sourceKind{
	"kafka.key":       srcKey,
	"kafka.value":     srcValue,
	"kafka.topic":     srcTopic,
	"kafka.partition": srcPartition,
	"kafka.offset":    srcOffset,
	"kafka.timestamp": srcTimestamp,
	"kafka.headers":   srcHeaders,
}

const kafkaSourceList = "kafka.key, kafka.value, kafka.topic, kafka.partition, kafka.offset, kafka.timestamp, kafka.headers, kafka.header.NAME"

// sourceTypes lists the column types each non-JSON source converts to.
var sourceTypes = map[sourceKind][]sink.Type{
	srcValue:     {sink.String, sink.Int32, sink.Int64, sink.Float32, sink.Float64, sink.Bool, sink.Timestamp, sink.Date, sink.Bytes, sink.JSON},
	srcKey:       {sink.String, sink.Int32, sink.Int64, sink.Float32, sink.Float64, sink.Bool, sink.Timestamp, sink.Date, sink.Bytes, sink.JSON},
	srcHeader:    {sink.String, sink.Int32, sink.Int64, sink.Float32, sink.Float64, sink.Bool, sink.Timestamp, sink.Date, sink.Bytes, sink.JSON},
	srcTopic:     {sink.String, sink.Bytes},
	srcPartition: {sink.Int32, sink.Int64, sink.Float32, sink.Float64, sink.String},
	srcOffset:    {sink.Int64, sink.Float64, sink.String},
	srcTimestamp: {sink.Timestamp, sink.Date, sink.Int64, sink.String},
	srcHeaders:   {sink.StringMap},
}

// parseSource classifies a column's source; a JSON path is returned parsed.
func parseSource(src, format string) (sourceKind, string, []pathStep, error) {
	if src == "value" && format == "text" {
		return srcValue, "", nil, nil
	}
	if name, ok := strings.CutPrefix(src, "kafka.header."); ok {
		if name == "" {
			return 0, "", nil, fmt.Errorf("%q names no header; write kafka.header.NAME", src)
		}
		return srcHeader, name, nil, nil
	}
	if k, ok := kafkaSources[src]; ok {
		return k, "", nil, nil
	}
	if strings.HasPrefix(src, "kafka.") {
		return 0, "", nil, fmt.Errorf("%q is not one of %s (for a JSON field named kafka write [\"kafka\"]...)", src, kafkaSourceList)
	}
	if format == "text" {
		return 0, "", nil, fmt.Errorf("%q: in text format a source is value or one of %s", src, kafkaSourceList)
	}
	steps, err := parsePath(src)
	if err != nil {
		return 0, "", nil, err
	}
	return srcPath, "", steps, nil
}

func typeList(ts []sink.Type) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}
