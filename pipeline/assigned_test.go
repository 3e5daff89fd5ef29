package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// TestHeldPartitionRetriesANetworkErrorSoon: a partition held because its
// broker could not be reached (a broker restarting) is tried again within
// heldBackoffNetwork, however often it failed; before, its wait doubled to
// a minute, and in TestChaos a partition started 8 s after its broker was
// back. Other faults keep the doubling wait.
func TestHeldPartitionRetriesANetworkErrorSoon(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused
	client := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 2 * time.Second}
	_, dialErr := client.ListOffsets(context.Background(), &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{"t": {kafka.FirstOffsetOf(0)}}})
	if dialErr == nil {
		t.Fatal("listing offsets on a closed port succeeded")
	}
	held := fmt.Errorf("listing offsets of t: %w", dialErr)
	if got := heldWait(held, 32*time.Second); got != heldBackoffNetwork {
		t.Errorf("wait after %v: %s, want %s", held, got, heldBackoffNetwork)
	}
	refused := errors.New("sink refused the partition's writes")
	if got := heldWait(refused, 32*time.Second); got != 32*time.Second {
		t.Errorf("wait after %v: %s, want the doubled 32s", refused, got)
	}
}
