package producer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/produce"
	"github.com/segmentio/kafka-go/protocol/rawproduce"
)

// batch is a run of records for one partition, sent as one record batch.
type batch struct {
	part    *partState
	records []Record
	refs    []ref
	bytes   int
	created time.Time

	// sealed: no more records join; set when it is first sent.
	sealed bool
	// deadline: the records fail if not acknowledged by then, sent or
	// not (a partition without a leader for that long).
	deadline time.Time
	enc      *bytes.Buffer // the encoded batch, kept for every retry
	// The producer id, epoch and base sequence it was stamped with, in
	// generation gen.
	pid      int64
	epoch    int16
	seq      int32
	gen      int
	attempts int
	retryAt  time.Time
	// unsure: an attempt got no answer (a timeout, a lost connection) or
	// an answer that does not say (REQUEST_TIMED_OUT,
	// NOT_ENOUGH_REPLICAS_AFTER_APPEND): the batch may be in the log.
	// It is sent again with the same numbers only, so the broker drops
	// the copy (idempotence); if it is given up, the producer id goes.
	unsure bool
}

type ref struct {
	call *call
	idx  int
}

func (b *batch) fail(err error) {
	for _, r := range b.refs {
		r.call.resolve(r.idx, b.part.id, err)
	}
}

func (b *batch) succeed() {
	for _, r := range b.refs {
		r.call.resolve(r.idx, b.part.id, nil)
	}
}

// dropCancelled removes the records of calls whose context ended, from a
// batch not yet encoded; it reports whether any remain.
func (b *batch) dropCancelled() bool {
	keep := 0
	for i, r := range b.refs {
		if r.call.cancelled.Load() {
			r.call.resolve(r.idx, b.part.id, context.Canceled)
			continue
		}
		b.refs[keep], b.records[keep] = r, b.records[i]
		keep++
	}
	clear(b.records[keep:])
	b.refs, b.records = b.refs[:keep], b.records[:keep]
	return keep > 0
}

func (b *batch) allCancelled() bool {
	for _, r := range b.refs {
		if !r.call.cancelled.Load() {
			return false
		}
	}
	return true
}

// dispatch sends every partition's head batch that is ready to its
// leader, one request per broker at a time, and wakes for linger, backoff
// and delivery deadlines.
func (p *Producer) dispatch() {
	defer p.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := p.dispatchOnce()
		timer.Reset(time.Until(next))
		select {
		case <-p.life.Done():
			return
		case <-p.wake:
		case <-timer.C:
		}
	}
}

// dispatchOnce launches what can go now and says when to look again.
func (p *Producer) dispatchOnce() time.Time {
	now := time.Now()
	next := now.Add(time.Second)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.needPID && !p.initing && !now.Before(p.pidWait) && !p.closed && p.txn == nil {
		p.initing = true
		p.wg.Add(1)
		go p.initPID()
	}
	if !p.pidWait.IsZero() && now.Before(p.pidWait) {
		next = earlier(next, p.pidWait)
	}
	requests := make(map[int32][]*batch)
	for _, ts := range p.topics {
		for _, part := range ts.parts {
			if b, at := p.ready(part, now); b != nil {
				if part.leader < 0 || p.busy[part.leader] {
					if part.leader < 0 {
						p.wantMetadata()
					}
					continue
				}
				if _, known := p.brokers[part.leader]; !known {
					p.wantMetadata()
					continue
				}
				p.prepare(part, b, now)
				part.inflight = true
				requests[part.leader] = append(requests[part.leader], b)
			} else if !at.IsZero() {
				next = earlier(next, at)
			}
		}
	}
	for leader, batches := range requests {
		p.busy[leader] = true
		p.wg.Add(1)
		go p.send(leader, p.brokers[leader], batches)
	}
	return next
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// ready returns part's head batch if it may be sent now, failing the ones
// past their deadline or wholly cancelled on the way; else when to look
// again (zero: when something happens). The caller holds mu.
func (p *Producer) ready(part *partState, now time.Time) (*batch, time.Time) {
	for !part.inflight && len(part.queue) > 0 {
		b := part.queue[0]
		var giveUp error
		switch {
		case b.enc == nil && !b.dropCancelled():
			part.queue = part.queue[1:]
			continue
		case b.enc != nil && b.allCancelled():
			giveUp = context.Canceled
		case now.After(b.deadline):
			giveUp = fmt.Errorf("not acknowledged after %d attempts in %s: %w", b.attempts, now.Sub(b.created).Round(time.Millisecond), kafka.RequestTimedOut)
		}
		if giveUp != nil {
			p.giveUp(part, b, giveUp)
			continue
		}
		if now.Before(b.retryAt) {
			return nil, b.retryAt
		}
		if !b.sealed && len(b.records) < p.cfg.BatchRecords && b.bytes < p.cfg.BatchBytes && len(part.queue) == 1 && p.waiting.Load() == 0 {
			if at := b.created.Add(p.cfg.Linger); now.Before(at) {
				return nil, at
			}
		}
		if p.txn != nil {
			if p.needPID && !(b.unsure && b.enc != nil) {
				// The transaction lost its sequence (a refused or given-up
				// batch): nothing more of it can be written.
				p.giveUp(part, b, fmt.Errorf("%w: a batch before this one was refused or given up", ErrAbortTxn))
				continue
			}
			if !part.inTxn {
				return nil, time.Time{} // AddPartitionsToTxn is on its way
			}
		}
		if p.needPID && !(b.unsure && b.enc != nil) {
			return nil, time.Time{} // a new id is on its way; a pinned batch may go meanwhile
		}
		return b, time.Time{}
	}
	return nil, time.Time{}
}

// giveUp fails the head batch. One that may be in the log takes the
// producer id with it: the partition's sequence did not advance, so the
// next batch would carry the same sequence, and a broker that has the
// given-up batch would drop the next one as its copy. The caller holds mu.
func (p *Producer) giveUp(part *partState, b *batch, err error) {
	part.queue = part.queue[1:]
	if b.unsure {
		p.resetPID(b.gen, fmt.Sprintf("gave up a batch of %s/%d that may have been written", part.topic, part.id), err)
	}
	if p.txn != nil {
		p.txn.fail(fmt.Errorf("%s/%d: %w", part.topic, part.id, err))
	}
	b.fail(err)
}

// prepare seals b and gives it its numbers: a batch sent before keeps
// them while it may be in the log; any other takes the partition's next
// sequence in the current generation. The caller holds mu.
func (p *Producer) prepare(part *partState, b *batch, now time.Time) {
	b.sealed = true
	b.attempts++
	if b.enc != nil && (b.gen == p.gen || b.unsure) {
		return
	}
	if part.gen != p.gen {
		part.gen, part.seq = p.gen, 0
	}
	b.pid, b.epoch, b.seq, b.gen = p.pid, p.epoch, part.seq, p.gen
	if b.enc != nil {
		stamp(b.enc.Bytes(), b.pid, b.epoch, b.seq)
	}
}

// send writes one Produce request with batches (one per partition) to
// broker id and settles each batch by its answer.
func (p *Producer) send(id int32, br broker, batches []*batch) {
	defer p.wg.Done()
	err := p.encode(batches)
	var res *produce.Response
	var written bool
	if err == nil {
		res, written, err = p.roundTrip(id, br, p.request(batches))
	}

	p.mu.Lock()
	p.busy[id] = false
	now := time.Now()
	if err != nil {
		for _, b := range batches {
			if errors.Is(err, errEncode) {
				p.settle(br, b, now, nil, err)
			} else {
				p.retryBatch(b, now, written, err)
			}
		}
		p.wantMetadata()
	} else {
		answers := make(map[*partState]*produce.ResponsePartition, len(batches))
		for ti := range res.Topics {
			t := &res.Topics[ti]
			for pi := range t.Partitions {
				rp := &t.Partitions[pi]
				for _, b := range batches {
					if b.part.topic == t.Topic && b.part.id == rp.Partition {
						answers[b.part] = rp
					}
				}
			}
		}
		for _, b := range batches {
			p.settle(br, b, now, answers[b.part], nil)
		}
	}
	p.mu.Unlock()
	p.poke()
}

var errEncode = errors.New("encoding a record batch")

// encodeBuffers are encoded batches' buffers, used again once a batch is
// written: a catch-up encodes a batch_bytes buffer per request.
var encodeBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// encode encodes the batches not yet encoded, outside mu: compression is
// the costly part of producing. Only this goroutine touches a batch in
// flight.
func (p *Producer) encode(batches []*batch) error {
	now := time.Now()
	for _, b := range batches {
		if b.enc != nil {
			continue
		}
		b.enc = encodeBuffers.Get().(*bytes.Buffer)
		b.enc.Grow(b.bytes/2 + 4 + batchHeaderLen)
		if err := encodeBatch(b.enc, b.records, p.cfg.Compression, p.txn != nil, now); err != nil {
			b.enc = nil
			return fmt.Errorf("%w: %v", errEncode, err)
		}
		stamp(b.enc.Bytes(), b.pid, b.epoch, b.seq)
	}
	return nil
}

func (p *Producer) request(batches []*batch) *rawproduce.Request {
	req := &rawproduce.Request{Acks: -1, Timeout: int32(p.brokerTimeout() / time.Millisecond)}
	if p.txn != nil {
		req.TransactionalID = p.txn.coord.Key
	}
	byTopic := make(map[string]int)
	for _, b := range batches {
		ti, ok := byTopic[b.part.topic]
		if !ok {
			ti = len(req.Topics)
			byTopic[b.part.topic] = ti
			req.Topics = append(req.Topics, rawproduce.RequestTopic{Topic: b.part.topic})
		}
		req.Topics[ti].Partitions = append(req.Topics[ti].Partitions, rawproduce.RequestPartition{
			Partition: b.part.id,
			RecordSet: protocol.RawRecordSet{Reader: bytes.NewReader(b.enc.Bytes())},
		})
	}
	return req
}

// brokerTimeout is how long the broker may wait for replicas: less than
// our own deadline, so a slow ISR comes back as REQUEST_TIMED_OUT rather
// than as a timeout of ours.
func (p *Producer) brokerTimeout() time.Duration {
	return p.cfg.RequestTimeout - min(time.Second, p.cfg.RequestTimeout/4)
}

// roundTrip sends req to broker id on its produce connection, dialling it
// if needed. written says whether the request may have reached the
// broker (an error before that cannot have written anything).
func (p *Producer) roundTrip(id int32, br broker, req *rawproduce.Request) (*produce.Response, bool, error) {
	ctx, cancel := context.WithTimeout(p.life, p.cfg.RequestTimeout)
	defer cancel()
	p.mu.Lock()
	c := p.conns[id]
	p.mu.Unlock()
	if c == nil {
		var err error
		if c, err = dialConn(ctx, p.cfg.Dial, p.cfg.ClientID, br.Addr, p.cfg.RequestTimeout); err != nil {
			return nil, false, fmt.Errorf("broker %d: %w", id, err)
		}
		p.mu.Lock()
		p.conns[id] = c
		p.mu.Unlock()
	}
	msg, err := c.Request(ctx, req)
	if err != nil {
		p.mu.Lock()
		if p.conns[id] == c {
			delete(p.conns, id)
		}
		p.mu.Unlock()
		c.Close()
		return nil, true, fmt.Errorf("broker %d: %w", id, err)
	}
	return msg.(*produce.Response), true, nil
}

// retryBatch puts b back at the head of its partition to go again after a
// backoff; written says the last attempt may be in the log. The caller
// holds mu.
func (p *Producer) retryBatch(b *batch, now time.Time, written bool, err error) {
	part := b.part
	part.inflight = false
	b.unsure = b.unsure || written
	if b.attempts >= p.cfg.MaxAttempts {
		p.giveUp(part, b, fmt.Errorf("%d attempts: %w", b.attempts, err))
		return
	}
	b.retryAt = now.Add(backoff(b.attempts))
	p.cfg.Log.Debug("producer: retrying a batch", "topic", part.topic, "partition", part.id, "attempt", b.attempts, "err", err)
}

// backoff doubles from 100ms to 1s.
func backoff(attempt int) time.Duration {
	return min(time.Second, 100*time.Millisecond<<min(attempt-1, 4))
}

// Kafka error codes the producer answers in its own way.
const (
	codeNone                 = 0
	codeMessageTooLarge      = 10
	codeRecordListTooLarge   = 18
	codeNotEnoughAfterAppend = 20
	codeRequestTimedOut      = 7
	codeOutOfOrderSequence   = 45
	codeDuplicateSequence    = 46
	codeInvalidProducerEpoch = 47
	codeInvalidPIDMapping    = 49
	codeUnknownProducerID    = 59
	codeProducerFenced       = 90
)

// settle acts on one partition's answer (nil: the broker left it out);
// err is a failure to encode. The caller holds mu.
func (p *Producer) settle(br broker, b *batch, now time.Time, rp *produce.ResponsePartition, err error) {
	part := b.part
	if err != nil {
		part.inflight = false
		part.queue = part.queue[1:]
		b.fail(err)
		return
	}
	if rp == nil {
		p.retryBatch(b, now, true, fmt.Errorf("broker %d did not answer for %s/%d", br.ID, part.topic, part.id))
		return
	}
	switch code := rp.ErrorCode; code {
	case codeNone, codeDuplicateSequence:
		// DUPLICATE_SEQUENCE_NUMBER: the broker has this batch already,
		// from an attempt whose answer we lost; it is written, once.
		part.inflight = false
		part.queue = part.queue[1:]
		if b.gen == p.gen && part.gen == p.gen {
			part.seq = b.seq + int32(len(b.records))
		}
		p.cfg.Stats.add(br, p.cfg.Rack, b.enc.Len()-4)
		b.succeed()
		// Written: its bytes go to the next batch (the request that
		// carried them is answered).
		encodeBuffers.Put(b.enc)
		b.enc = nil

	case codeInvalidProducerEpoch, codeProducerFenced, codeOutOfOrderSequence, codeUnknownProducerID, codeInvalidPIDMapping:
		if p.txn != nil {
			// In a transaction a refused batch cannot be sent again under
			// new numbers: the transaction is aborted (which bumps the
			// epoch) and the caller writes it all again. An older epoch
			// than the broker's is a fence, or the coordinator aborted the
			// transaction for its timeout; the abort tells which.
			part.inflight = false
			part.queue = part.queue[1:]
			err := fmt.Errorf("%s/%d at broker %d: %w", part.topic, part.id, br.ID, kafka.Error(code))
			if code == codeInvalidProducerEpoch || code == codeProducerFenced {
				err = fmt.Errorf("%w: %w", ErrProducerFenced, err)
			}
			p.resetPID(b.gen, "a transactional batch was refused", err)
			p.txn.fail(err)
			b.fail(err)
			return
		}
		// The broker refused the batch for its numbers, so it is not in
		// the log: the broker lost our earlier batches (an unclean leader
		// election) or forgot the producer (its records all deleted).
		// Nothing can make those numbers valid again; as the Java client
		// and franz-go do, start again with a new producer id and send
		// the batch anew, at sequence 0.
		part.inflight = false
		p.resetPID(b.gen, fmt.Sprintf("%s/%d refused the batch's sequence", part.topic, part.id), kafka.Error(code))
		b.unsure = false
		b.retryAt = now
		if b.attempts >= p.cfg.MaxAttempts {
			p.giveUp(part, b, kafka.Error(code))
		}

	case codeMessageTooLarge, codeRecordListTooLarge:
		part.inflight = false
		if len(b.records) > 1 && !b.allCancelled() {
			// Which record is too big the broker does not say; send each
			// alone, so only that one fails.
			p.split(part, b)
			return
		}
		part.queue = part.queue[1:]
		b.fail(fmt.Errorf("%s/%d: %w", part.topic, part.id, kafka.Error(code)))

	default:
		kerr := kafka.Error(code)
		if !kerr.Temporary() {
			part.inflight = false
			part.queue = part.queue[1:]
			msg := ""
			if rp.ErrorMessage != "" {
				msg = " (" + rp.ErrorMessage + ")"
			}
			b.fail(fmt.Errorf("%s/%d at broker %d: %w%s", part.topic, part.id, br.ID, kerr, msg))
			return
		}
		// A leader that moved, an ISR too small for acks=all, a broker
		// still loading: ask for leaders and go again.
		p.wantMetadata()
		p.retryBatch(b, now, code == codeRequestTimedOut || code == codeNotEnoughAfterAppend, fmt.Errorf("%s/%d at broker %d: %w", part.topic, part.id, br.ID, kerr))
	}
}

// split replaces the head batch by one batch per record. The caller holds
// mu.
func (p *Producer) split(part *partState, b *batch) {
	singles := make([]*batch, 0, len(b.records)+len(part.queue)-1)
	for i := range b.records {
		singles = append(singles, &batch{part: part, created: b.created, records: b.records[i : i+1 : i+1], refs: b.refs[i : i+1 : i+1],
			bytes: recordSize(&b.records[i]), sealed: true, deadline: b.deadline})
	}
	part.queue = append(singles, part.queue[1:]...)
}
