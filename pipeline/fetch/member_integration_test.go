//go:build integration

package fetch

// memberReaders makes a member's readers of partitions 0..n-1, sharing one
// Client as the job's partition workers (pipeline/worker) do.
func memberReaders(base ReaderConfig, n int) ([]*PartitionReader, func()) {
	client := NewClient(ClientConfig{Brokers: base.Brokers, Dialer: base.Dialer, MaxWait: base.MaxWait, Stats: base.Stats, Log: base.Log})
	base.Client = client
	readers := make([]*PartitionReader, n)
	for p := range readers {
		cfg := base
		cfg.Partition = p
		readers[p] = NewPartitionReader(cfg)
	}
	return readers, func() {
		for _, r := range readers {
			r.Close()
		}
		client.Close()
	}
}
