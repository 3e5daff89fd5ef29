package producer

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/addoffsetstotxn"
	"github.com/segmentio/kafka-go/protocol/addpartitionstotxn"
	"github.com/segmentio/kafka-go/protocol/endtxn"
	"github.com/segmentio/kafka-go/protocol/initproducerid"
	"github.com/segmentio/kafka-go/protocol/txnoffsetcommit"

	"github.com/logstore/logstore/internal/kafka/conn"
)

// Transactions (KIP-98) with a consumer group's offsets in them (KIP-447).
//
// A Producer with Config.TransactionalID writes only inside a transaction:
// BeginTxn, then Produce (a partition is added to the transaction,
// AddPartitionsToTxn, before its first batch is sent), SendOffsets (the
// group's offsets, committed with the transaction), and CommitTxn or
// AbortTxn. A read_committed consumer sees the records and the group sees
// the offsets when, and only when, the transaction commits. One transaction
// at a time; CommitTxn and AbortTxn wait for no Produce call, so the caller
// lets its Produce calls return first.
//
// Zombies are fenced twice, as KIP-447 has it: InitProducerId with the same
// transactional id gives a new epoch and makes every request of an older
// epoch fail (ErrProducerFenced), and TxnOffsetCommit carries the member's
// generation, which the group coordinator checks (ErrGroupFenced).
//
// After an abort the epoch is bumped (InitProducerId with the current
// producer id and epoch, KIP-360): sequences start again at 0, and a batch
// of the aborted transaction still on its way to a broker is refused there
// rather than written after the abort marker. The same request tells a
// transaction the coordinator aborted for its timeout (KIP-588: the
// coordinator bumped the epoch itself, and takes this producer back) from a
// producer that was fenced (the coordinator refuses it).

// GroupMember is who commits offsets in a transaction: the group, and the
// member's generation, member id and instance id as its last SyncGroup
// gave them.
type GroupMember struct {
	Group      string
	Generation int32
	MemberID   string
	InstanceID string // "" for a dynamic member
}

// Offset is a partition's next offset to read, committed in a transaction.
type Offset struct {
	Topic     string
	Partition int32
	Offset    int64
	Metadata  string
}

// txnState is a transactional producer's own; the producer's mu guards it.
type txnState struct {
	coord *conn.Coordinator
	// open: BeginTxn was called and neither CommitTxn nor AbortTxn since.
	open bool
	// started: a partition or a group's offsets were added, so the
	// coordinator has a transaction to end.
	started bool
	// groups whose offsets were added (AddOffsetsToTxn) in this one.
	groups map[string]*conn.Coordinator
	// failed: an error after which only AbortTxn is right.
	failed error
	// commitSent: an EndTxn(commit) went out and its answer never came, so
	// the coordinator may have committed; AbortTxn finds out.
	commitSent bool
	// fenced is final: this producer's epoch is not the newest.
	fenced error
}

// newTxnState is the state of a producer with cfg.TransactionalID.
func newTxnState(p *Producer, id string) *txnState {
	return &txnState{coord: p.coordinator(conn.Transaction, id), groups: map[string]*conn.Coordinator{}}
}

var errNotTransactional = errors.New("producer: not transactional (no TransactionalID)")

// ErrNoTxn is what Produce answers on a transactional producer outside a
// transaction.
var ErrNoTxn = errors.New("producer: no transaction open (call BeginTxn)")

// InitTxn asks for the producer id and epoch (InitProducerId with the
// transactional id) if the producer has none: any earlier producer with
// the id is fenced, and its open transaction aborted, now. BeginTxn does
// it too; a caller that must not wait for that transaction's timeout
// calls it first.
func (p *Producer) InitTxn(ctx context.Context) error {
	if p.txn == nil {
		return errNotTransactional
	}
	p.mu.Lock()
	need, fenced := p.needPID, p.txn.fenced
	p.mu.Unlock()
	if fenced != nil {
		return fenced
	}
	if !need {
		return nil
	}
	return p.initTxn(ctx, false)
}

// BeginTxn opens a transaction. The first one asks for the producer id and
// epoch (InitTxn).
func (p *Producer) BeginTxn(ctx context.Context) error {
	t := p.txn
	if t == nil {
		return errNotTransactional
	}
	p.mu.Lock()
	switch {
	case t.fenced != nil:
		p.mu.Unlock()
		return t.fenced
	case t.open:
		p.mu.Unlock()
		return errors.New("producer: a transaction is open already")
	}
	need := p.needPID
	p.mu.Unlock()
	if need {
		if err := p.initTxn(ctx, false); err != nil {
			return err
		}
	}
	p.mu.Lock()
	t.open, t.started, t.failed = true, false, nil
	clear(t.groups)
	p.mu.Unlock()
	return nil
}

// initTxn asks the transaction coordinator for the producer id and epoch:
// a new one (bump false, or no id yet), or the next epoch of the current
// one (bump). Every partition starts at sequence 0 again.
func (p *Producer) initTxn(ctx context.Context, bump bool) error {
	t := p.txn
	p.mu.Lock()
	req := &initproducerid.Request{
		TransactionalID:      t.coord.Key,
		TransactionTimeoutMs: int32(p.cfg.TransactionTimeout.Milliseconds()),
		ProducerID:           -1,
		ProducerEpoch:        -1,
	}
	if bump && p.pid >= 0 {
		req.ProducerID, req.ProducerEpoch = p.pid, p.epoch
	}
	p.mu.Unlock()
	msg, err := p.coordinatorAsk(ctx, t.coord, "InitProducerId", req, func(m protocol.Message) int16 { return m.(*initproducerid.Response).ErrorCode })
	if err != nil {
		return p.txnError(err)
	}
	res := msg.(*initproducerid.Response)
	p.mu.Lock()
	p.pid, p.epoch = res.ProducerID, res.ProducerEpoch
	p.gen++
	p.needPID = false
	for _, ts := range p.topics {
		for _, part := range ts.parts {
			part.inTxn = false
		}
	}
	p.mu.Unlock()
	p.cfg.Log.Debug("producer: transactional id initialised", "transactional_id", t.coord.Key, "producer_id", res.ProducerID, "epoch", res.ProducerEpoch, "bumped", bump)
	p.poke()
	return nil
}

// txnError sorts a coordinator's answer: a fenced producer is fenced for
// good, a fenced member is the group's, an invalid timeout is the config's.
func (p *Producer) txnError(err error) error {
	var ke kafka.Error
	if !errors.As(err, &ke) {
		return err
	}
	switch txnClassOf(int16(ke)) {
	case txnProducerFenced:
		err = fmt.Errorf("%w: %w", ErrProducerFenced, err)
		p.mu.Lock()
		if p.txn.fenced == nil {
			p.txn.fenced = err
		}
		p.mu.Unlock()
	case txnGroupFenced:
		err = fmt.Errorf("%w: %w", ErrGroupFenced, err)
	}
	if ke == kafka.InvalidTransactionTimeout {
		err = fmt.Errorf("%w: the transaction timeout %s is over the brokers' transaction.max.timeout.ms", err, p.cfg.TransactionTimeout)
	}
	return err
}

// fail marks the open transaction as one to abort. The caller holds mu.
func (t *txnState) fail(err error) {
	if t.open && t.failed == nil {
		t.failed = err
	}
}

// addPartitions adds partitions whose batches wait for it to the open
// transaction (AddPartitionsToTxn); the brokers refuse a transactional
// batch for a partition the transaction does not hold (KIP-890's
// verification). On failure the waiting batches fail, unsent.
func (p *Producer) addPartitions(ctx context.Context, parts []*partState) error {
	t := p.txn
	p.mu.Lock()
	req := &addpartitionstotxn.Request{TransactionalID: t.coord.Key, ProducerID: p.pid, ProducerEpoch: p.epoch}
	byTopic := map[string]int{}
	for _, part := range parts {
		i, ok := byTopic[part.topic]
		if !ok {
			i = len(req.Topics)
			byTopic[part.topic] = i
			req.Topics = append(req.Topics, addpartitionstotxn.RequestTopic{Name: part.topic})
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, part.id)
	}
	p.mu.Unlock()
	_, err := p.coordinatorAsk(ctx, t.coord, "AddPartitionsToTxn", req, func(m protocol.Message) int16 { return partitionsCode(m.(*addpartitionstotxn.Response)) })
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		err = fmt.Errorf("producer: adding partitions to the transaction: %w", p.txnErrorLocked(err))
		t.fail(err)
		for _, part := range parts {
			if part.inTxn {
				continue
			}
			for _, b := range part.queue {
				b.fail(err)
			}
			part.queue = nil
		}
		return err
	}
	t.started = true
	for _, part := range parts {
		part.inTxn = true
	}
	return nil
}

// txnErrorLocked is txnError for a caller holding mu.
func (p *Producer) txnErrorLocked(err error) error {
	p.mu.Unlock()
	defer p.mu.Lock()
	return p.txnError(err)
}

// partitionsCode is an AddPartitionsToTxn answer's worst code: the one that
// is not OPERATION_NOT_ATTEMPTED (what the others say when one failed).
func partitionsCode(res *addpartitionstotxn.Response) int16 {
	var code int16
	for _, r := range res.Results {
		for _, pr := range r.Results {
			if pr.ErrorCode != 0 && (code == 0 || code == codeOperationNotAttempted) {
				code = pr.ErrorCode
			}
		}
	}
	return code
}

// SendOffsets commits offsets for the group member within the open
// transaction: AddOffsetsToTxn (once per group) tells the transaction
// coordinator to write the commit marker to the group's offsets
// partition too, and TxnOffsetCommit gives the group coordinator the
// offsets with the member's generation, which it refuses if the group moved
// on (ErrGroupFenced). The offsets become the group's when the transaction
// commits, and are dropped if it aborts.
func (p *Producer) SendOffsets(ctx context.Context, m GroupMember, offsets []Offset) error {
	t := p.txn
	if t == nil {
		return errNotTransactional
	}
	p.mu.Lock()
	if err := t.usable(); err != nil {
		p.mu.Unlock()
		return err
	}
	group := t.groups[m.Group]
	pid, epoch := p.pid, p.epoch
	p.mu.Unlock()
	if group == nil {
		_, err := p.coordinatorAsk(ctx, t.coord, "AddOffsetsToTxn", &addoffsetstotxn.Request{TransactionalID: t.coord.Key, ProducerID: pid, ProducerEpoch: epoch, GroupID: m.Group},
			func(m protocol.Message) int16 { return m.(*addoffsetstotxn.Response).ErrorCode })
		if err != nil {
			return p.failTxn(fmt.Errorf("producer: adding group %s to the transaction: %w", m.Group, p.txnError(err)))
		}
		group = p.coordinator(conn.Group, m.Group)
		p.mu.Lock()
		t.started = true
		t.groups[m.Group] = group
		p.mu.Unlock()
	}
	req := &txnoffsetcommit.Request{
		TransactionalID: t.coord.Key, GroupID: m.Group, ProducerID: pid, ProducerEpoch: epoch,
		GenerationID: m.Generation, MemberID: m.MemberID, GroupInstanceID: m.InstanceID,
	}
	byTopic := map[string]int{}
	for _, o := range offsets {
		i, ok := byTopic[o.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[o.Topic] = i
			req.Topics = append(req.Topics, txnoffsetcommit.RequestTopic{Name: o.Topic})
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, txnoffsetcommit.RequestPartition{
			Partition: o.Partition, CommittedOffset: o.Offset, CommittedLeaderEpoch: -1, CommittedMetadata: o.Metadata,
		})
	}
	_, err := p.coordinatorAsk(ctx, group, "TxnOffsetCommit", req, func(m protocol.Message) int16 { return offsetsCode(m.(*txnoffsetcommit.Response)) })
	if err != nil {
		return p.failTxn(fmt.Errorf("producer: committing offsets of group %s (generation %d, member %s) in the transaction: %w", m.Group, m.Generation, m.MemberID, p.txnError(err)))
	}
	return nil
}

// offsetsCode is a TxnOffsetCommit answer's first error code.
func offsetsCode(res *txnoffsetcommit.Response) int16 {
	for _, t := range res.Topics {
		for _, pr := range t.Partitions {
			if pr.ErrorCode != 0 {
				return pr.ErrorCode
			}
		}
	}
	return 0
}

// usable says whether the open transaction takes more. The caller holds mu.
func (t *txnState) usable() error {
	switch {
	case t.fenced != nil:
		return t.fenced
	case !t.open:
		return ErrNoTxn
	case t.failed != nil:
		return fmt.Errorf("%w: %w", ErrAbortTxn, t.failed)
	}
	return nil
}

func (p *Producer) failTxn(err error) error {
	p.mu.Lock()
	p.txn.fail(err)
	p.mu.Unlock()
	return err
}

// CommitTxn commits the open transaction: its records become visible to
// read_committed consumers and its offsets the group's. A transaction
// that had a failure is not committed: the error wraps ErrAbortTxn, and
// the caller aborts. An EndTxn whose answer was lost is sent again; the
// coordinator answers a repeated commit as it did the first. When no
// answer comes before ctx ends the error wraps ErrTxnOutcomeUnknown: the
// caller still calls AbortTxn, which tells it what happened.
func (p *Producer) CommitTxn(ctx context.Context) error {
	return p.endTxn(ctx, true)
}

// AbortTxn aborts the open transaction: no read_committed consumer sees
// its records, and its offsets are dropped. Then the epoch is bumped (see
// above). Aborting with no transaction open does nothing.
//
// After a commit whose answer was lost (ErrTxnOutcomeUnknown) the abort
// may find the transaction committed: the coordinator answers
// INVALID_TXN_STATE, and AbortTxn returns ErrTxnCommitted. When the abort
// gets no answer either, the bump (InitProducerId) ends the transaction
// the coordinator's way — a commit it had prepared completes, anything
// else aborts — and AbortTxn returns ErrTxnOutcomeUnknown: only the
// offsets the transaction committed (StableOffsets) tell.
func (p *Producer) AbortTxn(ctx context.Context) error {
	return p.endTxn(ctx, false)
}

func (p *Producer) endTxn(ctx context.Context, commit bool) error {
	t := p.txn
	if t == nil {
		return errNotTransactional
	}
	p.mu.Lock()
	if !t.open {
		fenced := t.fenced
		p.mu.Unlock()
		if fenced != nil {
			return fenced
		}
		if commit {
			return ErrNoTxn
		}
		return nil
	}
	if p.queued() {
		p.mu.Unlock()
		return errors.New("producer: ending a transaction while records of it are still being produced")
	}
	if commit {
		if err := t.usable(); err != nil {
			p.mu.Unlock()
			return err
		}
	}
	started, broken, fenced := t.started, p.needPID, t.fenced
	pid, epoch := p.pid, p.epoch
	p.mu.Unlock()

	var err error
	if started && fenced == nil {
		_, err = p.coordinatorAsk(ctx, t.coord, "EndTxn", &endtxn.Request{TransactionalID: t.coord.Key, ProducerID: pid, ProducerEpoch: epoch, Committed: commit},
			func(m protocol.Message) int16 { return m.(*endtxn.Response).ErrorCode })
		if err != nil {
			err = p.txnError(err)
		}
	}
	if commit {
		if err != nil {
			// Open still: the caller aborts, and the abort's bump tells a
			// transaction the coordinator aborted for its timeout from a
			// fenced producer.
			if !answered(err) {
				p.mu.Lock()
				t.commitSent = true
				p.mu.Unlock()
				err = fmt.Errorf("%w: %w", ErrTxnOutcomeUnknown, err)
			}
			return p.failTxn(fmt.Errorf("producer: committing the transaction: %w", err))
		}
		p.closeTxn()
		return nil
	}
	p.mu.Lock()
	commitSent := t.commitSent
	p.mu.Unlock()
	if commitSent && errors.Is(err, kafka.InvalidTransactionState) {
		// The commit whose answer was lost went through: the transaction
		// is over, and nothing is left to abort or to bump.
		p.closeTxn()
		return fmt.Errorf("producer: aborting the transaction after a commit whose answer was lost: %w (%w)", ErrTxnCommitted, err)
	}
	// Abort: a bump tells a timed-out transaction from a zombie (KIP-588),
	// aborts the transaction when EndTxn could not, and keeps late batches
	// of this one out of the log.
	if started || broken || err != nil {
		p.mu.Lock()
		p.txn.fenced = nil // the bump decides
		p.needPID = true   // a failed bump leaves the next BeginTxn to ask anew
		p.mu.Unlock()
		if berr := p.initTxn(ctx, true); berr != nil {
			p.closeTxn()
			if commitSent {
				berr = fmt.Errorf("%w: %w", ErrTxnOutcomeUnknown, berr)
			}
			return fmt.Errorf("producer: aborting the transaction: %w", errors.Join(err, berr))
		}
		if commitSent && err != nil {
			// Neither the commit nor the abort was answered: the bump ended
			// the transaction, committed if the coordinator had prepared
			// the commit, aborted otherwise.
			p.closeTxn()
			return fmt.Errorf("producer: aborting the transaction after a commit whose answer was lost: %w: %w", ErrTxnOutcomeUnknown, err)
		}
		err = nil
	}
	p.closeTxn()
	if err != nil {
		return fmt.Errorf("producer: aborting the transaction: %w", err)
	}
	return nil
}

// answered says whether err is the coordinator's answer (an error code)
// rather than a request that heard nothing back.
func answered(err error) bool {
	var ke kafka.Error
	return errors.As(err, &ke)
}

// closeTxn forgets the ended transaction's partitions.
func (p *Producer) closeTxn() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.txn.open, p.txn.started, p.txn.failed, p.txn.commitSent = false, false, nil, false
	for _, ts := range p.topics {
		for _, part := range ts.parts {
			part.inTxn = false
		}
	}
}

// queued says whether any batch waits or is in flight. The caller holds mu.
func (p *Producer) queued() bool {
	for _, ts := range p.topics {
		if slices.ContainsFunc(ts.parts, func(part *partState) bool { return len(part.queue) > 0 || part.inflight }) {
			return true
		}
	}
	return false
}

// toAdd returns the partitions of parts that the open transaction does not
// hold yet. The caller holds mu.
func toAdd(parts map[*partState]bool) []*partState {
	var out []*partState
	for part := range parts {
		if !part.inTxn {
			out = append(out, part)
		}
	}
	slices.SortFunc(out, func(a, b *partState) int {
		if a.topic != b.topic {
			if a.topic < b.topic {
				return -1
			}
			return 1
		}
		return int(a.id - b.id)
	})
	return out
}
