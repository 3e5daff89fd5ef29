//go:build !notable

package main

// The table sink (sinks.iceberg) and the table command are linked unless
// the binary is built with -tags notable: that build links none of
// iceberg-go (sink.TableSink).
import _ "github.com/logstore/logstore/sink/iceberg"
