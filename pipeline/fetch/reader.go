package fetch

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"

	"github.com/logstore/logstore/internal/clock"
	"github.com/logstore/logstore/pipeline/record"

	"github.com/logstore/logstore/internal/kafka/conn"
)

// Isolation levels of ReaderConfig.Isolation.
const (
	// ReadUncommitted returns every record up to the high watermark,
	// including those of open and aborted transactions.
	ReadUncommitted = "read_uncommitted"
	// ReadCommitted returns records up to the last stable offset and drops
	// those of aborted transactions.
	ReadCommitted = "read_committed"
)

// isolationLevel is the Fetch and ListOffsets field for a level name.
func isolationLevel(name string) (int8, error) {
	switch name {
	case "", ReadUncommitted:
		return 0, nil
	case ReadCommitted:
		return 1, nil
	}
	return 0, fmt.Errorf("isolation %q: want %s or %s", name, ReadUncommitted, ReadCommitted)
}

// Defaults of ReaderConfig.
const (
	// DefaultPreferredLease matches the Java consumer, which re-asks the
	// leader for the preferred replica at every metadata refresh
	// (metadata.max.age.ms, 5 minutes).
	DefaultPreferredLease = 5 * time.Minute
	// DefaultFetchMaxBytes is a partition's part of a fetch, as the Java
	// consumer's max.partition.fetch.bytes and kafka.fetch.max_bytes; a
	// larger first batch still comes whole (KIP-74).
	DefaultFetchMaxBytes = 1 << 20
	DefaultFetchMaxWait  = 500 * time.Millisecond
)

const (
	// requestTimeout bounds a request beyond the fetch's MaxWait: a broker
	// that neither answers nor resets the connection is given up after it.
	requestTimeout = 10 * time.Second
	// retryBudget is how long Fetch keeps retrying errors it expects to
	// pass (leader elections, restarts) before it returns the last one.
	retryBudget = 30 * time.Second
)

// ReaderConfig configures a PartitionReader.
type ReaderConfig struct {
	// Client, if set, is the member's connection layer the reader shares
	// with its other readers (one fetch per broker for all of them); its
	// ClientConfig then supplies Brokers, Dialer, Isolation, MinBytes,
	// MaxWait and Stats, and those fields below are not used. Without a
	// Client the reader makes its own from them and closes it on Close.
	Client *Client

	// Brokers are the seed addresses, host:port.
	Brokers []string
	// Dialer carries the connection settings: ClientID, Timeout, DialFunc,
	// Resolver, TLS and SASLMechanism. Nil means kafka.DefaultDialer.
	Dialer *kafka.Dialer

	Topic     string
	Partition int

	// Rack is the reader's rack (broker.rack naming). With a rack the
	// leader may name a preferred read replica in it (KIP-392, Fetch v11,
	// brokers with replica.selector.class set); empty reads from leaders.
	Rack string
	// LeaderOnly keeps the rack for the byte counts but never sends it, so
	// every fetch goes to the leader (rack.follower_fetching: off).
	LeaderOnly bool
	// Isolation is ReadUncommitted (the default) or ReadCommitted.
	Isolation string

	// MinBytes and MaxWait: the broker answers when it has MinBytes or
	// MaxWait has passed. Defaults 1 byte and 500ms.
	MinBytes int
	MaxWait  time.Duration
	// MaxBytes is the most a fetch returns for the partition (the broker
	// still returns a first batch larger than this). Default 8 MiB.
	MaxBytes int

	// PreferredLease is how long the reader follows a preferred read
	// replica before asking the leader again. Default 5 minutes.
	PreferredLease time.Duration
	// ReplicaBackoff is how long the reader reads from the leader alone
	// after its preferred replica failed, before it sends its rack again;
	// it doubles with each failure in a row up to ReplicaBackoffMax and
	// starts over once the replica serves a fetch. Defaults 1s and 30s.
	ReplicaBackoff, ReplicaBackoffMax time.Duration

	// Stats, if set, counts every fetched byte.
	Stats *Stats
	// Log defaults to slog.Default().
	Log *slog.Logger
}

// OffsetOutOfRangeError is returned by Fetch when the leader confirms that
// the reader's offset is outside the log; the caller applies its reset
// policy and sets the offset.
type OffsetOutOfRangeError struct {
	Topic     string
	Partition int
	Offset    int64
	// LogStart is the earliest offset, LogEnd the high watermark (the last
	// stable offset under read_committed).
	LogStart, LogEnd int64
	// Truncated says the log was cut back under the reader (an unclean
	// leader election, KIP-320): LogEnd is then where the new leader's log
	// parts from the records the reader read.
	Truncated bool
}

func (e *OffsetOutOfRangeError) Error() string {
	if e.Truncated {
		return fmt.Sprintf("%s/%d: log truncated at %d under offset %d (an unclean leader election): the log holds [%d, %d)",
			e.Topic, e.Partition, e.LogEnd, e.Offset, e.LogStart, e.LogEnd)
	}
	return fmt.Sprintf("%s/%d: offset %d is out of range: the log holds [%d, %d)",
		e.Topic, e.Partition, e.Offset, e.LogStart, e.LogEnd)
}

// Unwrap makes errors.Is(err, kafka.OffsetOutOfRange) hold.
func (e *OffsetOutOfRangeError) Unwrap() error { return kafka.OffsetOutOfRange }

// PartitionReader reads one partition with Fetch v11. It sends the reader's
// rack, follows the preferred read replica the leader names, and falls back
// to the leader when that replica fails. A PartitionReader is not safe for
// concurrent use, except Close, which aborts a Fetch in flight.
//
// The reader's fetches go through its Client, which sends one Fetch per
// broker for every reader waiting on that broker, in a fetch session
// (KIP-227). The leader epoch sent is the one Metadata v7+ reports, so brokers fence a
// reader with stale metadata. After the leadership moves, the reader asks
// the new leader where the epoch of its last record ends (OffsetForLeaderEpoch,
// KIP-320), so a log truncated by an unclean election is reported even when
// the offset is still inside the new log. Records are decoded by kafka-go's protocol
// package, which registers the gzip, snappy, lz4 and zstd codecs.
type PartitionReader struct {
	cfg    ReaderConfig
	client *Client
	owned  bool // the client is the reader's own, closed with it
	pool   *brokerPool
	stats  *Stats
	log    *slog.Logger
	// closing is closed by Close, which ends a Fetch in flight.
	closing   chan struct{}
	closeOnce sync.Once

	isolation int8
	cfgErr    error // a bad ReaderConfig, returned by every call

	offset int64
	part   partitionState
	known  bool // part is from metadata and not known to be stale
	// epochMisses counts replica answers in a row that say the leader
	// epoch moved; past a few, the replica is treated as failing.
	epochMisses int

	// replica is the preferred read replica (-1: none), followed until
	// replicaUntil. leaderOnlyUntil is set when a replica failed: until then
	// the reader asks the leader without its rack, so that the leader serves
	// records itself instead of naming the replica again. backoff spaces
	// those waits.
	replica         int32
	replicaUntil    time.Time
	leaderOnlyUntil time.Time
	backoff         conn.Backoff // the preferred read replica's; see DefaultReplicaBackoff

	failingSince time.Time
	attempt      int
	warnedOld    bool

	// lastEpoch is the leader epoch of the last batch read (-1: none since
	// the offset was set); validate asks for a truncation check against the
	// new leader after the leadership moved (KIP-320).
	lastEpoch int32
	validate  bool

	// lent is the pooled chunks the last Fetch's keys and values are cut
	// from; Recycle gives them back. returned is the last Fetch's records,
	// whose storage Recycle keeps in spare for the next fetch's.
	lent            [][]byte
	returned, spare []record.Record

	// fetchMax is the partition's part of the next fetches (SetFetchMax);
	// 0: cfg.MaxBytes.
	fetchMax int
}

// NewPartitionReader returns a reader positioned at kafka.FirstOffset. It
// connects on the first call that needs a broker.
func NewPartitionReader(cfg ReaderConfig) *PartitionReader {
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultFetchMaxBytes
	}
	if cfg.PreferredLease <= 0 {
		cfg.PreferredLease = DefaultPreferredLease
	}
	if cfg.ReplicaBackoff <= 0 {
		cfg.ReplicaBackoff = DefaultReplicaBackoff
	}
	if cfg.ReplicaBackoffMax <= 0 {
		cfg.ReplicaBackoffMax = DefaultReplicaBackoffMax
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	client, owned := cfg.Client, false
	if client == nil {
		client, owned = NewClient(ClientConfig{
			Brokers: cfg.Brokers, Dialer: cfg.Dialer, Isolation: cfg.Isolation,
			MinBytes: cfg.MinBytes, MaxWait: cfg.MaxWait, RequestMaxBytes: cfg.MaxBytes,
			Stats: cfg.Stats, Log: log,
		}), true
	}
	log = log.With("topic", cfg.Topic, "partition", cfg.Partition)
	return &PartitionReader{
		cfg:       cfg,
		client:    client,
		owned:     owned,
		pool:      client.pool,
		stats:     client.cfg.Stats,
		log:       log,
		closing:   make(chan struct{}),
		isolation: client.isolation,
		cfgErr:    client.cfgErr,
		offset:    kafka.FirstOffset,
		lastEpoch: -1,
		replica:   -1,
		backoff:   conn.Backoff{Min: cfg.ReplicaBackoff, Max: cfg.ReplicaBackoffMax},
	}
}

// SetOffset sets the offset of the next record Fetch returns; kafka.FirstOffset
// and kafka.LastOffset stand for the log's start and end. (Not Seek: go vet's
// stdmethods check wants io.Seeker's signature for that name.)
func (r *PartitionReader) SetOffset(offset int64) {
	r.offset, r.lastEpoch, r.validate = offset, -1, false
}

// Offset is the offset of the next record Fetch returns.
func (r *PartitionReader) Offset() int64 { return r.offset }

// SetFetchMax bounds the partition's part of the next fetches to n bytes,
// at most ReaderConfig.MaxBytes (n <= 0: MaxBytes), so that a fetch
// returns about what its worker reserved from the memory budget. As with
// MaxBytes, a first record batch larger than n comes whole (KIP-74).
func (r *PartitionReader) SetFetchMax(n int) {
	r.fetchMax = min(max(n, 0), r.cfg.MaxBytes)
}

// Close stops the reader (and closes its Client if it made its own). It may
// be called while a Fetch is in flight, which then fails.
func (r *PartitionReader) Close() error {
	r.closeOnce.Do(func() { close(r.closing) })
	if r.owned {
		return r.client.Close()
	}
	return nil
}

// isClosed says whether the reader or its Client was closed.
func (r *PartitionReader) isClosed() bool {
	select {
	case <-r.closing:
		return true
	default:
		return r.client.closed()
	}
}

// Watermarks returns the partition's log start offset and high watermark
// (the last stable offset under read_committed), asked from the leader.
func (r *PartitionReader) Watermarks(ctx context.Context) (logStart, high int64, err error) {
	err = r.withLeader(ctx, func(st partitionState) error {
		if logStart, err = r.pool.listOffset(ctx, st, r.cfg.Topic, r.cfg.Partition, listEarliest, r.isolation); err != nil {
			return err
		}
		high, err = r.pool.listOffset(ctx, st, r.cfg.Topic, r.cfg.Partition, listLatest, r.isolation)
		return err
	})
	return logStart, high, err
}

// OffsetForTime returns the offset of the first record whose timestamp is at
// or after t, or the end of the log when there is none.
func (r *PartitionReader) OffsetForTime(ctx context.Context, t time.Time) (int64, error) {
	var off int64
	err := r.withLeader(ctx, func(st partitionState) (err error) {
		off, err = r.pool.listOffset(ctx, st, r.cfg.Topic, r.cfg.Partition, t.UnixMilli(), r.isolation)
		if err == nil && off < 0 {
			off, err = r.pool.listOffset(ctx, st, r.cfg.Topic, r.cfg.Partition, listLatest, r.isolation)
		}
		return err
	})
	return off, err
}

// withLeader runs do against the partition leader, refreshing metadata and
// trying again when the leader moved.
func (r *PartitionReader) withLeader(ctx context.Context, do func(partitionState) error) error {
	if r.cfgErr != nil {
		return r.cfgErr
	}
	var err error
	for try := 0; try < 4; try++ {
		if try > 0 {
			r.known = false
			if !clock.Sleep(ctx, time.Duration(try)*200*time.Millisecond) {
				return ctx.Err()
			}
		}
		if err = r.refresh(ctx); err != nil {
			continue
		}
		if err = do(r.part); err == nil || !retriableLeaderError(err) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// refresh loads the partition's metadata unless it is known.
func (r *PartitionReader) refresh(ctx context.Context) error {
	if r.known {
		return nil
	}
	st, err := r.pool.partition(ctx, r.cfg.Topic, r.cfg.Partition)
	if err != nil {
		return err
	}
	if r.part.Leader != st.Leader && r.part.Replicas != nil {
		r.log.Info("partition leader moved", "from", r.part.Leader, "to", st.Leader, "leader_epoch", st.LeaderEpoch)
	}
	if r.part.Replicas != nil && st.LeaderEpoch > r.part.LeaderEpoch && r.lastEpoch >= 0 {
		r.validate = true
	}
	r.part, r.known = st, true
	return nil
}

// Fetch returns the records from the reader's offset on and advances past
// them; it returns no records when none arrived within MaxWait. highWatermark
// is the log end the broker reported (the last stable offset under
// read_committed). Errors that pass on their own are retried for up to 30s;
// an offset outside the log is an *OffsetOutOfRangeError.
func (r *PartitionReader) Fetch(ctx context.Context) (msgs []record.Record, highWatermark int64, err error) {
	if r.cfgErr != nil {
		return nil, 0, r.cfgErr
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		if err := r.refresh(ctx); err != nil {
			if permanent(err) {
				return nil, 0, err
			}
			if err := r.retryOrGiveUp(ctx, "metadata", err); err != nil {
				return nil, 0, err
			}
			continue
		}
		if r.offset < 0 {
			if err := r.resolveStart(ctx); err != nil {
				return nil, 0, err
			}
		}
		if r.validate {
			if err := r.checkTruncation(ctx); err != nil {
				var oor *OffsetOutOfRangeError
				if errors.As(err, &oor) || permanent(err) || ctx.Err() != nil {
					return nil, 0, err
				}
				r.known = false
				if err := r.retryOrGiveUp(ctx, "check for log truncation", err); err != nil {
					return nil, 0, err
				}
				continue
			}
		}

		broker, rack := r.route(time.Now())
		res, err := r.fetchFrom(ctx, broker, rack)
		if err != nil {
			if ctx.Err() != nil {
				return nil, 0, ctx.Err()
			}
			if errors.Is(err, errPoolClosed) || errors.Is(err, errBadResponse) {
				return nil, 0, err
			}
			if broker != r.part.Leader {
				r.fallBack(broker, err)
				continue
			}
			// The leader may have moved with the broker we lost.
			r.known = false
			if err := r.retryOrGiveUp(ctx, fmt.Sprintf("fetch from leader %d", broker), err); err != nil {
				return nil, 0, err
			}
			continue
		}

		switch code := kafka.Error(res.errorCode); {
		case res.errorCode == 0:
			// Only the leader's choice counts: followers answer -1, and
			// obeying any broker could bounce the reader between two.
			if res.preferred >= 0 && res.preferred != broker && broker == r.part.Leader {
				r.follow(ctx, res.preferred)
				continue
			}
			msgs, next, err := r.records(res)
			if err != nil {
				return nil, 0, err
			}
			r.failingSince, r.attempt, r.epochMisses = time.Time{}, 0, 0
			if broker != r.part.Leader {
				r.backoff.Reset()
			}
			if next > r.offset {
				r.offset = next
			}
			high := res.highWatermark
			if r.isolation == 1 && res.lastStable >= 0 {
				high = res.lastStable
			}
			return msgs, high, nil

		case broker != r.part.Leader && followerFallbackError(code):
			// KIP-392: a replica that is behind, out of sync, on another
			// leader epoch or no longer a replica answers with one of
			// these; the leader knows better. OFFSET_OUT_OF_RANGE from a
			// replica says nothing about the leader's log, so no reset yet.
			if epochChanged(code) && r.epochMisses < 3 {
				// The leadership moved (a broker restarted): the replica
				// is fine, our metadata is not. Ask the new leader, with
				// the rack, at once; a lease on a remote leader would
				// read cross-zone for minutes after every restart.
				r.epochMisses++
				r.known, r.replica = false, -1
				r.log.Info("preferred read replica is on another leader epoch; asking the leader again", "replica", broker, "err", code)
				continue
			}
			r.known = r.known && !epochChanged(code)
			r.fallBack(broker, code)

		case code == kafka.OffsetOutOfRange:
			err := r.confirmOutOfRange(ctx)
			if err == nil {
				continue // the log moved under us; the offset is valid again
			}
			var rangeErr *OffsetOutOfRangeError
			if errors.As(err, &rangeErr) {
				return nil, 0, err
			}
			if err := r.retryOrGiveUp(ctx, "confirm offset out of range", err); err != nil {
				return nil, 0, err
			}

		case leaderRetryError(code):
			r.known = false
			if err := r.retryOrGiveUp(ctx, fmt.Sprintf("fetch from leader %d", broker), code); err != nil {
				return nil, 0, err
			}

		default:
			return nil, 0, fmt.Errorf("fetch %s/%d from broker %d: %w", r.cfg.Topic, r.cfg.Partition, broker, code)
		}
	}
}

// route picks the broker to fetch from, and the rack to send it.
func (r *PartitionReader) route(now time.Time) (broker int32, rack string) {
	if r.replica >= 0 {
		if now.Before(r.replicaUntil) {
			return r.replica, r.cfg.Rack
		}
		r.log.Debug("preferred read replica lease expired; asking the leader", "replica", r.replica)
		r.replica = -1
	}
	if r.cfg.LeaderOnly || now.Before(r.leaderOnlyUntil) {
		return r.part.Leader, ""
	}
	return r.part.Leader, r.cfg.Rack
}

// follow starts a lease on the preferred read replica the leader named.
func (r *PartitionReader) follow(ctx context.Context, id int32) {
	if _, ok := r.pool.node(id); !ok {
		// A replica newer than our metadata.
		r.known = false
		if err := r.refresh(ctx); err != nil {
			r.log.Warn("metadata refresh for a preferred read replica failed", "replica", id, "err", err)
		}
	}
	n, ok := r.pool.node(id)
	if !ok {
		wait := r.backoff.Next()
		r.log.Warn("leader named a preferred read replica missing from metadata; reading from the leader", "replica", id, "for", wait)
		r.leaderOnlyUntil = time.Now().Add(wait)
		return
	}
	if r.replica != id {
		r.log.Info("fetching from preferred read replica", "replica", id, "replica_rack", n.Rack, "rack", r.cfg.Rack, "lease", r.cfg.PreferredLease)
	}
	r.replica = id
	r.replicaUntil = time.Now().Add(r.cfg.PreferredLease)
}

// fallBack leaves a failed replica for the leader, for one backoff: the
// leader keeps every partition moving while the replica is away, and is
// asked with the rack again soon after, so the reader is local again within
// seconds of a restarted broker catching up.
func (r *PartitionReader) fallBack(replica int32, why error) {
	wait := r.backoff.Next()
	r.log.Warn("preferred read replica failed; reading from the leader", "replica", replica, "leader", r.part.Leader, "for", wait, "err", why)
	r.replica = -1
	r.leaderOnlyUntil = time.Now().Add(wait)
}

// retryOrGiveUp waits before the next attempt, or returns err once errors
// have lasted retryBudget.
func (r *PartitionReader) retryOrGiveUp(ctx context.Context, what string, err error) error {
	if r.isClosed() {
		return errPoolClosed
	}
	now := time.Now()
	if r.failingSince.IsZero() {
		r.failingSince = now
	}
	if now.Sub(r.failingSince) > retryBudget {
		r.failingSince, r.attempt = time.Time{}, 0
		return fmt.Errorf("%s/%d: %s: %w", r.cfg.Topic, r.cfg.Partition, what, err)
	}
	r.attempt++
	r.log.Warn("retrying", "op", what, "attempt", r.attempt, "err", err)
	wait := min(100*time.Millisecond<<min(r.attempt-1, 5), 2*time.Second)
	wait = wait/2 + rand.N(wait/2+1)
	if !clock.Sleep(ctx, wait) {
		return ctx.Err()
	}
	return nil
}

// resolveStart turns kafka.FirstOffset or kafka.LastOffset into an offset.
func (r *PartitionReader) resolveStart(ctx context.Context) error {
	var ts int64
	switch r.offset {
	case kafka.FirstOffset:
		ts = listEarliest
	case kafka.LastOffset:
		ts = listLatest
	default:
		return fmt.Errorf("%s/%d: cannot seek to offset %d", r.cfg.Topic, r.cfg.Partition, r.offset)
	}
	return r.withLeader(ctx, func(st partitionState) (err error) {
		off, err := r.pool.listOffset(ctx, st, r.cfg.Topic, r.cfg.Partition, ts, r.isolation)
		if err == nil {
			r.offset = off
		}
		return err
	})
}

// confirmOutOfRange asks the leader for the log's bounds after the leader
// answered OFFSET_OUT_OF_RANGE. It returns nil if the offset is in range by
// now.
func (r *PartitionReader) confirmOutOfRange(ctx context.Context) error {
	start, end, err := r.Watermarks(ctx)
	if err != nil {
		return err
	}
	if r.offset >= start && r.offset <= end {
		return nil
	}
	return &OffsetOutOfRangeError{
		Topic: r.cfg.Topic, Partition: r.cfg.Partition,
		Offset: r.offset, LogStart: start, LogEnd: end,
	}
}

// fetchFrom waits for the reader's partition's part of the next Fetch the
// Client sends to broker with rack.
func (r *PartitionReader) fetchFrom(ctx context.Context, broker int32, rack string) (*fetchedPartition, error) {
	tp := topicPartition{r.cfg.Topic, int32(r.cfg.Partition)}
	limit := r.cfg.MaxBytes
	if r.fetchMax > 0 {
		limit = r.fetchMax
	}
	w := newFetchWant(tp, r.offset, r.part.LeaderEpoch, limit, r.cfg.Rack)
	return r.client.fetch(ctx, r.closing, broker, rack, w)
}

// records decodes the partition's record batches: it drops records before
// the reader's offset, control batches and, under read_committed, aborted
// transactions. next is the offset after the last batch seen, which may lie
// past the last record returned (compacted or aborted tails, markers).
func (r *PartitionReader) records(res *fetchedPartition) (msgs []record.Record, next int64, err error) {
	defer res.body.release() // everything kept is copied out of it
	next = r.offset
	if len(res.records) <= 4 {
		return nil, next, nil
	}
	set := res.records[4:]
	batches := scanBatches(set)
	// Batches of magic 2 (every broker since Kafka 0.11 writes them) are
	// read here (v2Records); a set holding older message sets goes through
	// kafka-go's decoder.
	var decoded []protocol.RecordReader
	if slices.ContainsFunc(batches, func(b batchHeader) bool { return b.magic < 2 }) {
		if decoded, err = r.decodeLegacy(res, batches); err != nil {
			return nil, next, err
		}
		batches = batches[:len(decoded)]
	}

	n := 0
	for _, b := range batches {
		if !b.control() {
			n += max(b.records, 0)
		}
	}
	// A header's count is only a hint until its batch's CRC is checked:
	// an uncompressed record takes at least 7 bytes.
	if want := min(n, len(set)/7+1); cap(r.spare) >= want {
		msgs, r.spare = r.spare[:0], nil
	} else {
		msgs = make([]record.Record, 0, want)
	}
	// A caller that did not Recycle keeps these; they go with its records.
	clear(r.lent)
	r.lent, r.returned = r.lent[:0], nil
	data := slab{chunk: min(len(res.records), 1<<20), lent: &r.lent}

	committed := r.isolation == 1
	aborted := slices.Clone(res.aborted)
	slices.SortFunc(aborted, func(a, b abortedTxn) int { return cmpInt64(a.firstOffset, b.firstOffset) })
	abortedProducers := make(map[int64]bool)
	epoch := r.lastEpoch
	defer func() {
		if err == nil {
			r.lastEpoch = epoch
		}
	}()

	for i, b := range batches {
		var rr protocol.RecordReader
		if decoded != nil {
			if rr = decoded[i]; !b.sameBatch(rr) {
				return nil, next, fmt.Errorf("%s/%d: %w: batch %d at offset %d decoded out of step", r.cfg.Topic, r.cfg.Partition, errBadResponse, i, b.base)
			}
		}
		if committed && res.lastStable >= 0 && b.base >= res.lastStable {
			break // not yet decided; brokers do not send these
		}
		skip := b.control()
		if committed && b.producerID >= 0 {
			for len(aborted) > 0 && aborted[0].firstOffset <= b.last {
				abortedProducers[aborted[0].producerID] = true
				aborted = aborted[1:]
			}
			if b.control() {
				abort, err := isAbortMarker(rr, set[b.start:b.end])
				if err != nil {
					return r.cutAt(i, b, msgs, next, err)
				}
				if abort {
					delete(abortedProducers, b.producerID)
				}
			} else if b.transactional() && abortedProducers[b.producerID] {
				skip = true
			}
		}
		if !skip && rr != nil {
			if msgs, err = r.appendRecords(msgs, rr, &data); err != nil {
				return nil, next, err
			}
		} else if !skip {
			kept := len(msgs)
			if msgs, err = r.appendV2(msgs, set[b.start:b.end], &data); err != nil {
				return r.cutAt(i, b, msgs[:kept], next, err)
			}
		}
		next = max(next, b.last+1)
		if b.epoch >= 0 {
			epoch = b.epoch
		}
	}
	r.returned = msgs
	return msgs, next, nil
}

// decodeLegacy decodes a record set holding message sets older than magic
// 2 with kafka-go, batch by batch as batches lists them.
func (r *PartitionReader) decodeLegacy(res *fetchedPartition, batches []batchHeader) ([]protocol.RecordReader, error) {
	var set protocol.RecordSet
	if err := readRecordSet(&set, res.records); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s/%d: decode records at offset %d: %w", r.cfg.Topic, r.cfg.Partition, r.offset, err)
	}
	var decoded []protocol.RecordReader
	if s, ok := set.Records.(*protocol.RecordStream); ok {
		decoded = s.Records
	}
	// kafka-go stops at the first batch it cannot decode (a bad CRC, an
	// unknown codec) and keeps the ones before it.
	if len(decoded) == 0 {
		return nil, r.undecodable(batches[0], errors.New("kafka-go cannot decode it"))
	}
	return decoded[:min(len(decoded), len(batches))], nil
}

// cutAt ends records at batch i (b), which cannot be read, as kafka-go's
// decoder did: the records of the batches before it are returned and the
// reader asks again from it; when it is the first, the response is bad.
func (r *PartitionReader) cutAt(i int, b batchHeader, msgs []record.Record, next int64, err error) ([]record.Record, int64, error) {
	if i == 0 {
		return nil, next, r.undecodable(b, err)
	}
	r.log.Warn("a record batch cannot be read; the records before it are returned", "offset", b.base, "error", err)
	return msgs, next, nil
}

// undecodable is the error of a response whose first batch cannot be read:
// the reader retries the fetch.
func (r *PartitionReader) undecodable(b batchHeader, err error) error {
	return fmt.Errorf("%s/%d: %w: cannot decode the record batch at offset %d: %v", r.cfg.Topic, r.cfg.Partition, errBadResponse, b.base, err)
}

// appendV2 appends the records of one v2 batch from the reader's offset on,
// their keys, values and header values copied into data.
func (r *PartitionReader) appendV2(msgs []record.Record, batch []byte, data *slab) ([]record.Record, error) {
	err := v2Records(batch, func(rec *v2Record) error {
		if rec.Offset < r.offset {
			return nil
		}
		var headers []protocol.Header
		if len(rec.headers) > 0 {
			headers = make([]protocol.Header, len(rec.headers))
			for i, h := range rec.headers {
				headers[i] = protocol.Header{Key: h.Key, Value: data.bytes(h.Value)}
			}
		}
		msgs = append(msgs, record.Record{
			Topic:     r.cfg.Topic,
			Partition: r.cfg.Partition,
			Offset:    rec.Offset,
			Key:       data.bytes(rec.Key),
			Value:     data.bytes(rec.Value),
			Headers:   headers,
			Time:      rec.Time,
		})
		return nil
	})
	return msgs, err
}

func (r *PartitionReader) appendRecords(msgs []record.Record, rr protocol.RecordReader, data *slab) ([]record.Record, error) {
	for {
		rec, err := rr.ReadRecord()
		if errors.Is(err, io.EOF) {
			return msgs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s/%d: read record: %w", r.cfg.Topic, r.cfg.Partition, err)
		}
		if rec.Offset < r.offset {
			closeBytes(rec.Key)
			closeBytes(rec.Value)
			continue
		}
		key, kerr := data.copy(rec.Key)
		value, verr := data.copy(rec.Value)
		closeBytes(rec.Key)
		closeBytes(rec.Value)
		if err := errors.Join(kerr, verr); err != nil {
			return nil, fmt.Errorf("%s/%d: read record %d: %w", r.cfg.Topic, r.cfg.Partition, rec.Offset, err)
		}
		msgs = append(msgs, record.Record{
			Topic:     r.cfg.Topic,
			Partition: r.cfg.Partition,
			Offset:    rec.Offset,
			Key:       key,
			Value:     value,
			Headers:   rec.Headers,
			Time:      rec.Time,
		})
	}
}

// readRecordSet decodes a fetched record set. kafka-go's decoder panics on
// some malformed sets (a v0/v1 message whose size runs past the set); a
// broken response must be an error the reader retries, not a crash.
func readRecordSet(set *protocol.RecordSet, b []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: malformed record set: %v", errBadResponse, p)
		}
	}()
	_, err = set.ReadFrom(bytes.NewBuffer(b))
	return err
}

// slab hands out the keys and values of one fetch from a few large
// allocations instead of two per record. A chunk of most of a pooled
// chunk's size comes from recordChunks, and is noted in lent.
type slab struct {
	buf   []byte
	chunk int
	lent  *[][]byte
}

// recordChunk is the size of a pooled chunk: a partition's fetch at full
// speed (kafka.fetch.max_bytes' default).
const recordChunk = 1 << 20

// recordChunks are chunks callers gave back (Recycle) for the next fetches
// of any reader: at full speed each fetch would otherwise allocate its
// size again, the largest part of what the job allocates. At most 8 are
// kept.
var recordChunks = &spares{max: 8 * recordChunk}

// grow starts a chunk with room for n bytes.
func (s *slab) grow(n int) {
	size := max(n, s.chunk)
	if s.lent == nil || size > recordChunk || size <= recordChunk/4 {
		s.buf = make([]byte, 0, size)
		return
	}
	b := recordChunks.get(recordChunk)
	if b == nil {
		b = make([]byte, 0, recordChunk)
	}
	*s.lent = append(*s.lent, b[:0])
	s.buf = b[:0]
}

// Recycle says the caller is done with every record Fetch returned so far,
// their keys', values' and headers' bytes included: nothing it keeps points
// into them. Their memory then serves the next fetches. A caller that keeps
// records' bytes (to produce them again as they were) must not call it.
func (r *PartitionReader) Recycle() {
	for _, b := range r.lent {
		recordChunks.put(b)
	}
	clear(r.lent)
	r.lent = r.lent[:0]
	if cap(r.returned) > 0 {
		r.spare = r.returned[:cap(r.returned)]
		clear(r.spare) // they point into the chunks just given back
		r.spare, r.returned = r.spare[:0], nil
	}
}

func (s *slab) copy(b protocol.Bytes) ([]byte, error) {
	if b == nil {
		return nil, nil
	}
	n := b.Len()
	if n == 0 {
		// Empty is not null: a zero-length slice of a slab not yet
		// allocated would be nil.
		return []byte{}, nil
	}
	if cap(s.buf)-len(s.buf) < n {
		s.grow(n)
	}
	start := len(s.buf)
	s.buf = s.buf[:start+n]
	out := s.buf[start : start+n : start+n]
	_, err := io.ReadFull(b, out)
	return out, err
}

// bytes copies b into the slab; nil stays nil and empty stays non-nil.
func (s *slab) bytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	if len(b) == 0 {
		return []byte{}
	}
	if cap(s.buf)-len(s.buf) < len(b) {
		s.grow(len(b))
	}
	start := len(s.buf)
	s.buf = append(s.buf, b...)
	return s.buf[start:len(s.buf):len(s.buf)]
}

func closeBytes(b protocol.Bytes) {
	if b != nil {
		b.Close()
	}
}

// isAbortMarker reports whether a control batch ends a transaction with an
// abort (control record type 0; 1 is a commit): from kafka-go's decoded
// batch rr, or else from the batch's bytes (its first record's key is the
// int16 version and the int16 type).
func isAbortMarker(rr protocol.RecordReader, batch []byte) (bool, error) {
	if rr != nil {
		cb, ok := rr.(*protocol.ControlBatch)
		if !ok {
			return false, nil
		}
		cr, err := cb.ReadControlRecord()
		return err == nil && cr.Type == 0, nil
	}
	abort := false
	err := v2Records(batch, func(rec *v2Record) error {
		abort = len(rec.Key) >= 4 && binary.BigEndian.Uint16(rec.Key[2:4]) == 0
		return errStop
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return abort, err
}

var errStop = errors.New("stop")

// followerFallbackError lists the fetch errors a preferred read replica
// answers when the leader should be asked instead.
func followerFallbackError(code kafka.Error) bool {
	switch code {
	case kafka.OffsetOutOfRange, kafka.NotLeaderForPartition, kafka.ReplicaNotAvailable,
		kafka.FencedLeaderEpoch, kafka.UnknownLeaderEpoch, kafka.OffsetNotAvailable,
		kafka.UnknownTopicOrPartition, kafka.KafkaStorageError, kafka.LeaderNotAvailable:
		return true
	}
	return false
}

// epochChanged says a replica answered for another leader epoch, or is no
// longer a replica: the partition's leadership moved.
func epochChanged(code kafka.Error) bool {
	return code == kafka.FencedLeaderEpoch || code == kafka.UnknownLeaderEpoch || code == kafka.NotLeaderForPartition
}

// leaderRetryError lists the fetch errors from a leader that a metadata
// refresh and another try resolve: the leadership moved, or our leader epoch
// and the broker's disagree while the news spreads.
func leaderRetryError(code kafka.Error) bool {
	switch code {
	case kafka.NotLeaderForPartition, kafka.LeaderNotAvailable, kafka.ReplicaNotAvailable,
		kafka.FencedLeaderEpoch, kafka.UnknownLeaderEpoch, kafka.OffsetNotAvailable,
		kafka.UnknownTopicOrPartition, kafka.KafkaStorageError, kafka.NetworkException,
		kafka.RequestTimedOut:
		return true
	}
	return false
}

// retriableLeaderError says whether a ListOffsets failure may pass with
// fresh metadata.
func retriableLeaderError(err error) bool {
	var code kafka.Error
	if errors.As(err, &code) {
		return leaderRetryError(code)
	}
	return !errors.Is(err, errPoolClosed) // I/O: the broker may be gone
}

// permanent says whether err is a Kafka error that retrying does not cure
// (authentication, authorization, a closed reader).
func permanent(err error) bool {
	var code kafka.Error
	return errors.Is(err, errPoolClosed) || errors.As(err, &code) && !code.Temporary()
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// fetchedPartition is one partition of a Fetch response. records is the
// record set as sent, with its int32 size in front.
type fetchedPartition struct {
	errorCode     int16
	highWatermark int64
	lastStable    int64
	logStart      int64
	aborted       []abortedTxn
	preferred     int32
	records       []byte
	body          *fetchBody // the response records is cut from; nil when not pooled
}

type abortedTxn struct{ producerID, firstOffset int64 }

// fetchBody is a Fetch response's bytes, shared by the partitions in it.
// Each partition's reader copies what it keeps (records) and then lets go
// (release); once the session and every reader did, the bytes serve the
// next response. A partition whose reader never reads its part (its fetch
// was cancelled) keeps the body from the pool; the collector frees it.
type fetchBody struct {
	buf  []byte
	refs atomic.Int32
}

// fetchBodies are response buffers given back for the next fetches of any
// session: at full speed each response would otherwise allocate (and
// zero) its size. At most 16 MiB are kept: one response of 16 partitions
// at kafka.fetch.max_bytes' default.
var fetchBodies = &spares{max: 16 << 20}

// getFetchBody is a body of n bytes for a Fetch response, kept from an
// earlier one when one large enough is (sizes are rounded up to
// recordChunk).
func getFetchBody(n int) *fetchBody {
	if b := fetchBodies.get(n); b != nil {
		return &fetchBody{buf: b[:n]}
	}
	return &fetchBody{buf: make([]byte, n, (n+recordChunk-1)/recordChunk*recordChunk)}
}

// share says n more holders (the readers of the partitions in it) will
// release b.
func (b *fetchBody) share(n int) {
	if b != nil {
		b.refs.Add(int32(n))
	}
}

// release lets go of b; the last holder gives it back to the pool.
func (b *fetchBody) release() {
	if b != nil && b.refs.Add(-1) == 0 {
		fetchBodies.put(b.buf)
	}
}

// fetchResponse is a Fetch response: its top-level error (fetch sessions,
// v7+), the session id, and every partition in it.
type fetchResponse struct {
	errorCode int16
	sessionID int32
	parts     map[topicPartition]*fetchedPartition
}

// parseFetchResponseAll reads a Fetch response body (v4 to v11). kafka-go's
// fetch.Response would decode it too, but it drops each batch's last offset
// delta, without which a reader cannot step over a batch whose tail was
// compacted away.
func parseFetchResponseAll(version int16, body []byte) (*fetchResponse, error) {
	w := wire{b: body}
	res := &fetchResponse{}
	w.int32() // throttle time
	if version >= 7 {
		if res.errorCode = w.int16(); res.errorCode != 0 {
			return res, w.err
		}
		res.sessionID = w.int32()
	}
	n := w.count()
	res.parts = make(map[topicPartition]*fetchedPartition, n)
	for range n {
		name := w.string()
		for range w.count() {
			p := &fetchedPartition{preferred: -1, lastStable: -1, logStart: -1}
			id := w.int32()
			p.errorCode = w.int16()
			p.highWatermark = w.int64()
			p.lastStable = w.int64()
			if version >= 5 {
				p.logStart = w.int64()
			}
			if n := w.count(); n > 0 {
				p.aborted = make([]abortedTxn, 0, n)
				for range n {
					p.aborted = append(p.aborted, abortedTxn{producerID: w.int64(), firstOffset: w.int64()})
				}
			}
			if version >= 11 {
				p.preferred = w.int32()
			}
			p.records = w.sizedBytes()
			if w.err != nil {
				return nil, w.err
			}
			tp := topicPartition{name, id}
			if res.parts[tp] == nil {
				res.parts[tp] = p
			}
		}
	}
	if w.err != nil {
		return nil, w.err
	}
	return res, nil
}

// parseFetchResponse reads a Fetch response body and returns the named
// partition; a top-level error comes back as the partition's.
func parseFetchResponse(version int16, body []byte, topic string, partition int32) (*fetchedPartition, error) {
	res, err := parseFetchResponseAll(version, body)
	if err != nil {
		return nil, err
	}
	if res.errorCode != 0 {
		return &fetchedPartition{errorCode: res.errorCode, preferred: -1}, nil
	}
	p := res.parts[topicPartition{topic, partition}]
	if p == nil {
		return nil, fmt.Errorf("no data for %s/%d in the response", topic, partition)
	}
	return p, nil
}

// batchHeader is what the reader needs from a record batch's header.
type batchHeader struct {
	start, end int // where the batch lies in the record set
	base, last int64
	producerID int64
	records    int
	attributes int16
	magic      int8
	epoch      int32 // partition leader epoch; -1 before magic 2
}

func (b batchHeader) control() bool       { return b.magic >= 2 && b.attributes&0x20 != 0 }
func (b batchHeader) transactional() bool { return b.magic >= 2 && b.attributes&0x10 != 0 }

// sameBatch checks that kafka-go's decoded batch is the one this header
// describes.
func (b batchHeader) sameBatch(rr protocol.RecordReader) bool {
	switch d := rr.(type) {
	case *protocol.RecordBatch:
		return b.magic == 2 && !b.control() && d.BaseOffset == b.base
	case *protocol.ControlBatch:
		return b.magic == 2 && b.control() && d.BaseOffset == b.base
	}
	return b.magic < 2
}

// scanBatches lists the complete record batches in a record set; brokers cut
// the last one short when it does not fit the response.
func scanBatches(set []byte) []batchHeader {
	var out []batchHeader
	at := 0
	for len(set) >= 17 {
		size := int(int32(binary.BigEndian.Uint32(set[8:12])))
		if size < 5 || 12+size > len(set) {
			break
		}
		h := batchHeader{
			start:      at,
			end:        at + 12 + size,
			base:       int64(binary.BigEndian.Uint64(set[0:8])),
			magic:      int8(set[16]),
			producerID: -1,
			epoch:      -1,
		}
		h.last = h.base // v0/v1: the (wrapper) offset is the last one
		h.records = 1
		if h.magic >= 2 {
			if size < 49 { // the fixed part of a v2 header
				break
			}
			h.epoch = int32(binary.BigEndian.Uint32(set[12:16]))
			h.attributes = int16(binary.BigEndian.Uint16(set[21:23]))
			h.last = h.base + int64(int32(binary.BigEndian.Uint32(set[23:27])))
			h.producerID = int64(binary.BigEndian.Uint64(set[43:51]))
			h.records = int(int32(binary.BigEndian.Uint32(set[57:61])))
		}
		out = append(out, h)
		set = set[12+size:]
		at += 12 + size
	}
	return out
}

// wire reads the big-endian primitives of the Kafka protocol; the first
// short read sets err and later reads return zeros.
type wire struct {
	b   []byte
	err error
}

func (w *wire) take(n int) []byte {
	if w.err != nil {
		return nil
	}
	if n < 0 || n > len(w.b) {
		w.err = fmt.Errorf("truncated at %d more bytes", n)
		return nil
	}
	out := w.b[:n:n]
	w.b = w.b[n:]
	return out
}

func (w *wire) int16() int16 {
	if b := w.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (w *wire) int32() int32 {
	if b := w.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (w *wire) int64() int64 {
	if b := w.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (w *wire) string() string {
	n := w.int16()
	if n < 0 {
		return ""
	}
	return string(w.take(int(n)))
}

// count reads an array length; null arrays count as empty.
func (w *wire) count() int {
	n := w.int32()
	if n < 0 || w.err != nil {
		return 0
	}
	if int(n) > len(w.b) {
		w.err = fmt.Errorf("array of %d elements in %d bytes", n, len(w.b))
		return 0
	}
	return int(n)
}

// sizedBytes returns nullable bytes together with their int32 size prefix.
func (w *wire) sizedBytes() []byte {
	if w.err != nil || len(w.b) < 4 {
		w.take(4)
		return nil
	}
	whole := w.b
	n := w.int32()
	if n <= 0 {
		return nil
	}
	w.take(int(n))
	if w.err != nil {
		return nil
	}
	return whole[: 4+int(n) : 4+int(n)]
}
