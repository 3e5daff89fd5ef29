package sink

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestTableSinkMissingFromTheBuildIsAConfigError: a binary built without
// the table sink (-tags notable) refuses sinks.iceberg with an error that
// says how to get a binary that has it, instead of a nil sink.
func TestTableSinkMissingFromTheBuildIsAConfigError(t *testing.T) {
	saved := tableOpener
	t.Cleanup(func() { tableOpener = saved })
	tableOpener = nil
	_, err := OpenTable(context.Background(), &IcebergConfig{Table: "logs.raw"}, &Schema{}, nil)
	if !errors.Is(err, ErrNoTableSink) || !strings.Contains(err.Error(), "-tags notable") {
		t.Fatalf("err %v, want ErrNoTableSink naming the build tag", err)
	}
}
