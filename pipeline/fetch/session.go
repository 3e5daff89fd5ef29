package fetch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/fetch"

	"github.com/logstore/logstore/internal/kafka/conn"
)

const (
	// gatherWait is how long a session waits, after answering a round, for
	// the readers it answered to ask again before it sends the next Fetch
	// without the latecomers. Readers that got nothing come back within
	// microseconds; without the wait an idle member's partitions would
	// split over two alternating fetches and churn the session.
	gatherWait = 10 * time.Millisecond
	// busyWait is the most a round waits at the broker while a reader
	// answered with records in the round before has not asked again yet
	// (its worker is still decoding them): that reader is not in the
	// round, and must not wait behind a long poll of max_wait for its next
	// records, which would throttle a busy partition among idle ones.
	busyWait = 20 * time.Millisecond
	// sessionIdle ends a session no reader used for this long (a partition
	// moved away, a fallback lane that is no longer needed).
	sessionIdle = time.Minute
)

// Fetch-session errors in the response's top-level error code (KIP-227).
const (
	errFetchSessionIDNotFound   kafka.Error = 70
	errInvalidFetchSessionEpoch kafka.Error = 71
)

// sessionKey names a fetch session: the broker, and the rack the Fetch
// sends. The rack is the request's, not the partition's, and a leader that
// is sent a rack names a preferred replica instead of serving records, so a
// reader that falls back to the leader for a while (rack "") fetches
// through a second session of that broker.
type sessionKey struct {
	broker int32
	rack   string
}

type topicPartition struct {
	topic     string
	partition int32
}

// fetchWant is one reader waiting for records of its partition from one
// broker, from offset on.
type fetchWant struct {
	tp          topicPartition
	offset      int64
	leaderEpoch int32
	maxBytes    int32
	countRack   string // the reader's rack, for the byte counts
	done        chan fetchResult
	// since is when the reader asked; gone, that it stopped waiting
	// (withdraw). Both under the session's mu.
	since time.Time
	gone  bool
}

func newFetchWant(tp topicPartition, offset int64, leaderEpoch int32, maxBytes int, countRack string) *fetchWant {
	return &fetchWant{tp: tp, offset: offset, leaderEpoch: leaderEpoch, maxBytes: int32(maxBytes), countRack: countRack, done: make(chan fetchResult, 1)}
}

type fetchResult struct {
	part *fetchedPartition
	err  error
}

// sessionPartition is what the broker's session holds for a partition:
// what was last sent for it, and the log bounds last reported, which an
// incremental response leaves out while they stay the same.
type sessionPartition struct {
	offset      int64
	leaderEpoch int32
	maxBytes    int32
	high        int64
	lastStable  int64
	logStart    int64
}

// fetchSession is the one goroutine that fetches from one broker for every
// reader of the Client, with an incremental fetch session (KIP-227): the
// first Fetch names every partition and opens the session; later ones name
// only partitions whose offset, leader epoch or limit changed, and list as
// forgotten those no reader waits for now, so an idle round names nothing.
// A partition is in a Fetch only while its reader waits for it, as the Java
// consumer's FetchSessionHandler does: records the broker sends for a
// partition nobody waits for would be dropped and sent again.
type fetchSession struct {
	c   *Client
	key sessionKey

	mu sync.Mutex
	// waiting holds the readers waiting, per partition, first come first
	// served (two readers of one partition, across a generation change,
	// take turns).
	waiting map[topicPartition][]*fetchWant
	// expect holds the partitions answered by the last round whose readers
	// have not asked again yet.
	expect map[topicPartition]bool
	// busy holds, with the time of the answer, partitions answered with
	// records whose readers have not asked again yet: while one is younger
	// than max_wait, rounds wait at most busyWait.
	busy map[topicPartition]time.Time
	wake chan struct{}

	// Owned by run.
	conn      *conn.Conn
	id, epoch int32 // epoch -1: sessions off, every Fetch is a full one
	parts     map[topicPartition]sessionPartition
	rounds    int
	warnedOld bool
}

func newFetchSession(c *Client, key sessionKey) *fetchSession {
	return &fetchSession{
		c:       c,
		key:     key,
		waiting: make(map[topicPartition][]*fetchWant),
		busy:    make(map[topicPartition]time.Time),
		wake:    make(chan struct{}, 1),
		parts:   make(map[topicPartition]sessionPartition),
	}
}

func (s *fetchSession) add(w *fetchWant) {
	s.mu.Lock()
	w.since = time.Now()
	first := len(s.waiting) == 0
	s.waiting[w.tp] = append(s.waiting[w.tp], w)
	delete(s.busy, w.tp)
	last := s.unexpect(w.tp)
	s.mu.Unlock()
	if first || last {
		s.signal()
	}
}

// unexpect notes that tp's reader asked again or left, and says whether it
// was the last reader the session waited for. Under mu.
func (s *fetchSession) unexpect(tp topicPartition) bool {
	if _, ok := s.expect[tp]; !ok {
		return false
	}
	delete(s.expect, tp)
	return len(s.expect) == 0
}

// signal wakes run, which sleeps only while no reader waits or while it
// gathers the readers it expects back: only the first reader and the last
// one expected need to wake it, not each of hundreds.
func (s *fetchSession) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// withdraw removes w if it still waits; a round already sent for it
// answers into its buffered channel, which nobody reads.
func (s *fetchSession) withdraw(w *fetchWant) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.gone = true
	ws := s.waiting[w.tp]
	if i := slices.Index(ws, w); i >= 0 {
		ws = slices.Delete(ws, i, i+1)
		if len(ws) == 0 {
			delete(s.waiting, w.tp)
		} else {
			s.waiting[w.tp] = ws
		}
	}
	delete(s.busy, w.tp)
	if s.unexpect(w.tp) {
		s.signal()
	}
}

func (s *fetchSession) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waiting) == 0
}

// ready says whether a round can start: a reader waits, and every reader
// answered last round asked again (or gatherUntil passed).
func (s *fetchSession) ready() (waiting, gathered bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waiting) > 0, len(s.expect) == 0
}

// take removes the first waiting reader of every partition, for one round,
// and says whether a reader recently answered with records is still out.
func (s *fetchSession) take() (batch map[topicPartition]*fetchWant, busy bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tp, at := range s.busy {
		if time.Since(at) < s.c.cfg.MaxWait {
			busy = true
		} else {
			delete(s.busy, tp) // a slow worker, or a reader gone: long polls again
		}
	}
	batch = make(map[topicPartition]*fetchWant, len(s.waiting))
	for tp, ws := range s.waiting {
		batch[tp] = ws[0]
		if len(ws) == 1 {
			delete(s.waiting, tp)
		} else {
			s.waiting[tp] = ws[1:]
		}
	}
	s.expect = nil
	return batch, busy
}

func (s *fetchSession) run() {
	defer func() {
		if s.conn != nil {
			s.conn.Close()
		}
	}()
	idle := time.NewTimer(sessionIdle)
	defer idle.Stop()
	gather := time.NewTimer(time.Hour)
	gather.Stop()
	defer gather.Stop()
	var gatherUntil time.Time
	for {
		waiting, gathered := s.ready()
		if !waiting {
			select {
			case <-s.wake:
			case <-idle.C:
				if s.c.retire(s) {
					return
				}
				idle.Reset(sessionIdle)
			case <-s.c.ctx.Done():
				return
			}
			continue
		}
		if wait := time.Until(gatherUntil); !gathered && wait > 0 {
			gather.Reset(wait)
			select {
			case <-s.wake:
				gather.Stop()
				continue
			case <-gather.C:
			case <-s.c.ctx.Done():
				return
			}
		}
		batch, busy := s.take()
		wait := s.c.cfg.MaxWait
		if busy {
			wait = min(wait, busyWait)
		}
		results := s.round(batch, wait)
		// Expected before answered: a reader may ask again at once.
		now := time.Now()
		s.mu.Lock()
		s.expect = make(map[topicPartition]bool, len(results))
		for tp, res := range results {
			if w := batch[tp]; s.keepWaiting(w, res, now) {
				delete(results, tp)
				continue
			}
			s.expect[tp] = true
			if res.part != nil && len(res.part.records) > 4 {
				s.busy[tp] = now
			}
		}
		s.mu.Unlock()
		for tp, res := range results {
			batch[tp].done <- res
		}
		gatherUntil = time.Now().Add(gatherWait)
		idle.Reset(sessionIdle)
	}
}

// keepWaiting puts back a reader a round answered with nothing before it
// waited max_wait, to wait on in the next round: a round cut short for a
// busy partition (busyWait) while its worker waits for memory would wake
// every idle reader, and each of hundreds of idle partitions' workers
// would go round its loop (give its fetch's memory back, take it again)
// some fifty times a second for nothing. An idle reader is answered by
// the first round that ends max_wait after it asked, as a long poll
// would; records, an error or a moved replica answer it at once. Under mu.
func (s *fetchSession) keepWaiting(w *fetchWant, res fetchResult, now time.Time) bool {
	p := res.part
	if w.gone || res.err != nil || p == nil || len(p.records) > 0 || p.errorCode != 0 || p.preferred >= 0 ||
		now.Sub(w.since) >= s.c.cfg.MaxWait {
		return false
	}
	s.waiting[w.tp] = append([]*fetchWant{w}, s.waiting[w.tp]...)
	return true
}

// round sends one Fetch for batch, waiting at most wait at the broker, and
// returns the answer for every reader in it. A session the broker lost or
// fenced starts over as a full one at once.
func (s *fetchSession) round(batch map[topicPartition]*fetchWant, wait time.Duration) map[topicPartition]fetchResult {
	results := make(map[topicPartition]fetchResult, len(batch))
	answer := func(tp topicPartition, res fetchResult) { results[tp] = res }
	fail := func(err error) map[topicPartition]fetchResult {
		for tp := range batch {
			answer(tp, fetchResult{err: err})
		}
		return results
	}
	s.rounds++
	for attempt := 0; ; attempt++ {
		req, full := s.request(batch, wait)
		version, fb, err := s.send(req)
		if err != nil {
			s.reset()
			return fail(err)
		}
		body := fb.buf
		var countRack string
		for _, w := range batch {
			countRack = w.countRack
			break
		}
		n, _ := s.c.pool.node(s.key.broker)
		s.c.cfg.Stats.add(s.key.broker, n.Rack, countRack, len(body)+8)

		res, err := parseFetchResponseAll(version, body)
		if err != nil {
			s.reset()
			return fail(fmt.Errorf("%w from broker %d: %v", errBadResponse, s.key.broker, err))
		}
		if code := kafka.Error(res.errorCode); code != 0 {
			retry := attempt == 0
			switch {
			case code == errFetchSessionIDNotFound && s.epoch == 0:
				// Asked for a new session and the broker has no slot
				// (max.incremental.fetch.session.cache.slots): go on
				// without, as the Java client and franz-go do.
				s.c.log.Info("broker has no room for another fetch session; fetching without one", "broker", s.key.broker, "err", code)
				s.reset()
				s.epoch = -1
			case code == errFetchSessionIDNotFound || code == errInvalidFetchSessionEpoch:
				// The broker evicted the session, or restarted, or a
				// request was lost: start a full session again.
				s.c.log.Info("fetch session lost; starting a new one", "broker", s.key.broker, "session", s.id, "epoch", s.epoch, "err", code)
				s.reset()
			default:
				s.reset()
				retry = false
			}
			if retry {
				continue
			}
			return fail(fmt.Errorf("fetch from broker %d: %w", s.key.broker, code))
		}
		s.commit(req, res.sessionID)
		s.learnBounds(res)
		// Each partition's reader releases the body once it has copied its
		// records (PartitionReader.records); the round holds it until every
		// part is handed out.
		fb.share(1)
		defer fb.release()
		for tp := range batch {
			p := res.parts[tp]
			if p != nil && len(p.records) > 0 {
				p.body = fb
				fb.share(1)
			}
			if p == nil && full {
				answer(tp, fetchResult{err: fmt.Errorf("%w from broker %d: no data for %s/%d in the response", errBadResponse, s.key.broker, tp.topic, tp.partition)})
				continue
			}
			if p == nil {
				// Left out of an incremental response: nothing new, and
				// the log bounds are as last reported.
				sp := s.parts[tp]
				p = &fetchedPartition{highWatermark: sp.high, lastStable: sp.lastStable, logStart: sp.logStart, preferred: -1}
			}
			answer(tp, fetchResult{part: p})
		}
		return results
	}
}

// request builds the round's Fetch. full says every partition of the batch
// is in it (a new session, or none), so each must be in the answer.
func (s *fetchSession) request(batch map[topicPartition]*fetchWant, wait time.Duration) (req *fetch.Request, full bool) {
	cfg := s.c.cfg
	full = s.epoch <= 0
	req = &fetch.Request{
		ReplicaID:      -1,
		MaxWaitTime:    int32(wait.Milliseconds()),
		MinBytes:       int32(cfg.MinBytes),
		MaxBytes:       int32(cfg.RequestMaxBytes),
		IsolationLevel: s.c.isolation,
		SessionID:      s.id,
		SessionEpoch:   s.epoch,
		RackID:         s.key.rack,
	}
	if s.epoch < 0 {
		req.SessionID = 0
	}
	tps := make([]topicPartition, 0, len(batch))
	for tp, w := range batch {
		if !full {
			if sp, ok := s.parts[tp]; ok && sp.offset == w.offset && sp.leaderEpoch == w.leaderEpoch && sp.maxBytes == w.maxBytes {
				continue // the session has it as it is
			}
		}
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, compareTopicPartitions)
	if full && len(tps) > 1 {
		// A full Fetch fills partitions in the order sent until
		// RequestMaxBytes; rotating the start shares a full response out
		// over the rounds. (In a session the broker moves partitions that
		// returned data to the end itself.)
		k := s.rounds % len(tps)
		tps = append(tps[k:], tps[:k]...)
	}
	for _, tp := range tps {
		w := batch[tp]
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != tp.topic {
			req.Topics = append(req.Topics, fetch.RequestTopic{Topic: tp.topic})
		}
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, fetch.RequestPartition{
			Partition:          tp.partition,
			CurrentLeaderEpoch: w.leaderEpoch,
			FetchOffset:        w.offset,
			LogStartOffset:     -1,
			PartitionMaxBytes:  w.maxBytes,
		})
	}
	if !full {
		var gone []topicPartition
		for tp := range s.parts {
			if batch[tp] == nil {
				gone = append(gone, tp)
			}
		}
		slices.SortFunc(gone, compareTopicPartitions)
		for _, tp := range gone {
			if n := len(req.ForgottenTopics); n == 0 || req.ForgottenTopics[n-1].Topic != tp.topic {
				req.ForgottenTopics = append(req.ForgottenTopics, fetch.RequestForgottenTopic{Topic: tp.topic})
			}
			t := &req.ForgottenTopics[len(req.ForgottenTopics)-1]
			t.Partitions = append(t.Partitions, tp.partition)
		}
	}
	return req, full
}

func compareTopicPartitions(a, b topicPartition) int {
	if c := strings.Compare(a.topic, b.topic); c != 0 {
		return c
	}
	return int(a.partition) - int(b.partition)
}

// commit records what the broker's session now holds after it accepted req
// and answered with session id (0: it opened none).
func (s *fetchSession) commit(req *fetch.Request, id int32) {
	if s.epoch < 0 {
		return
	}
	if id == 0 {
		// No session (the broker may be out of slots): the next Fetch is
		// a full one that asks for a session again.
		s.reset()
		return
	}
	if s.epoch > 0 && id != s.id {
		s.reset() // not the session we spoke of: start over
		return
	}
	if s.epoch == 0 {
		clear(s.parts)
		s.id = id
	}
	for _, t := range req.ForgottenTopics {
		for _, p := range t.Partitions {
			delete(s.parts, topicPartition{t.Topic, p})
		}
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := topicPartition{t.Topic, p.Partition}
			sp := s.parts[tp]
			sp.offset, sp.leaderEpoch, sp.maxBytes = p.FetchOffset, p.CurrentLeaderEpoch, p.PartitionMaxBytes
			s.parts[tp] = sp
		}
	}
	s.epoch++
	if s.epoch <= 0 {
		s.epoch = 1 // wrapped: epoch 0 would open a new session
	}
}

// learnBounds keeps the log bounds of a partition the response named.
func (s *fetchSession) learnBounds(res *fetchResponse) {
	for tp, p := range res.parts {
		sp, ok := s.parts[tp]
		if !ok || p.errorCode != 0 {
			continue
		}
		sp.high, sp.lastStable, sp.logStart = p.highWatermark, p.lastStable, p.logStart
		s.parts[tp] = sp
	}
}

// reset starts the session over: the next Fetch is a full one that closes
// the broker's old session (same id, epoch 0) and opens a new one.
func (s *fetchSession) reset() {
	if s.epoch >= 0 {
		s.epoch = 0
	}
	clear(s.parts)
}

// send sends req over the session's connection, dialling it if needed; a
// connection that outlived its broker process is dialled again once
// (conn.Stale). The request's session fields stay as they are: a broker
// that lost the session says so, and round starts a new one.
func (s *fetchSession) send(req *fetch.Request) (int16, *fetchBody, error) {
	ctx, cancel := context.WithTimeout(s.c.ctx, s.c.cfg.MaxWait+requestTimeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		if s.conn == nil {
			c, err := s.c.pool.dialNode(ctx, s.key.broker)
			if err != nil {
				return 0, nil, s.closedOr(err)
			}
			if err := s.checkVersion(c); err != nil {
				c.Close()
				return 0, nil, err
			}
			s.conn = c
		}
		c := s.conn
		if c.Version(protocol.Fetch) < 7 && s.epoch >= 0 {
			s.reset()
			s.epoch = -1 // a broker before Kafka 1.1 has no fetch sessions
		}
		var body *fetchBody
		version, _, reused, err := c.RequestInto(ctx, req, func(n int) []byte {
			body = getFetchBody(n)
			return body.buf
		})
		if err == nil {
			return version, body, nil
		}
		s.conn = nil
		c.Close()
		if attempt > 0 || ctx.Err() != nil || !conn.Stale(reused, err) {
			return 0, nil, s.closedOr(err)
		}
		s.c.log.Info("pooled connection is stale (the broker restarted?); dialling again", "broker", s.key.broker, "err", err)
	}
}

func (s *fetchSession) closedOr(err error) error {
	if s.c.closed() {
		return errPoolClosed
	}
	return err
}

// checkVersion refuses brokers below Fetch v4 and warns once, for a session
// that sends a rack, about brokers below v11 (no follower fetching).
func (s *fetchSession) checkVersion(c *conn.Conn) error {
	version := c.Version(protocol.Fetch)
	if version < 4 {
		return fmt.Errorf("%w: broker %d speaks Fetch up to v%d; logstore needs v4 (Kafka 0.11) or later", errBadResponse, s.key.broker, version)
	}
	if version < 11 && s.key.rack != "" && !s.warnedOld {
		s.warnedOld = true
		s.c.log.Warn("broker speaks Fetch below v11 (Kafka 2.4): no fetching from follower replicas", "broker", s.key.broker, "fetch_version", version)
	}
	return nil
}

var errBadResponse = errors.New("malformed fetch response")
