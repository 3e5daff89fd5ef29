package group

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/internal/clock"
	"github.com/logstore/logstore/internal/kafka/conn"

	"github.com/logstore/logstore/pipeline/group/wire"
)

// ConsumerConfig is the settings of a member on the next-generation
// protocol (kafka.group_protocol: consumer).
type ConsumerConfig struct {
	Group  string
	Topics []string
	// InstanceID makes the member static (KIP-345); "" is a dynamic member.
	InstanceID string
	// LeaveOnShutdown makes a static member leave at its stop, so its
	// partitions move at once (a scale-in), rather than wait for it for
	// the broker's session timeout (a restart).
	LeaveOnShutdown bool
	Brokers         []string
	Dialer          *kafka.Dialer
	// Rack is sent to the coordinator; the broker's assignors of Kafka 4.x
	// do not use it (KAFKA-19387), so it also decides the start's warning.
	Rack             string
	FollowerFetching bool
	// Assignor is the broker-side assignor: uniform or range.
	Assignor         string
	RebalanceTimeout time.Duration
	// InitialDelay is how long a member alone in an empty group holds its
	// first assignment back, so members started with it share the
	// partitions from the start (initialdelay848.go); 0 starts at once.
	InitialDelay time.Duration
	Log          *slog.Logger
}

// ConsumerMember is a group member on the next-generation consumer group
// protocol (KIP-848): it heartbeats with ConsumerGroupHeartbeat, the
// coordinator assigns (with the broker-side assignor) and hands each
// member, heartbeat by heartbeat, the partitions it may read now. The
// member reconciles incrementally: it stops what left its assignment
// (Handler.Revoke: committed first, while it still owns it), starts what
// came (Handler.Assign), and acknowledges what it then owns in its next
// heartbeat, sent at once. A partition reaches its new owner only after
// the old owner acknowledged letting go of it, so no partition has two
// readers.
//
// Epochs fence as generations do on the classic protocol: commits carry
// the member epoch (OffsetCommit v9); FENCED_MEMBER_EPOCH or
// UNKNOWN_MEMBER_ID means the group went on without this member (its
// partitions are lost and it joins again, with the same member id).
//
// The member heartbeats on its own schedule whatever the job does with an
// assignment: Assign and Revoke run beside the heartbeats, never in their
// way (the job's Assign may wait out a dead member's transaction, longer
// than any session). The interval is the coordinator's (every answer
// carries it) and the session the group's (consumer.session.timeout.ms,
// else the brokers' group.consumer.session.timeout.ms), read when the
// member joins.
type ConsumerMember struct {
	cfg    ConsumerConfig
	coord  *coordinator // heartbeats
	commit *coordinator // offset commits, so they never wait behind a heartbeat
	log    *slog.Logger
	id     string // made by the member (KIP-1082), kept for its life

	current // the member epoch stands for the generation

	mu     sync.Mutex
	topics topicMetadata
	// subscribed is what the heartbeats subscribe to: the configured
	// topics less those deleted since.
	subscribed []string

	// The schedule, touched only by Run's goroutine.
	interval time.Duration // between heartbeats: the coordinator's
	session  time.Duration // past it unanswered, the partitions are lost
	lastOK   time.Time     // when the last answered heartbeat was sent
}

// NewConsumer returns a member; Run joins.
func NewConsumer(cfg ConsumerConfig) *ConsumerMember {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	var raw [16]byte
	rand.Read(raw[:])
	id := base64.RawURLEncoding.EncodeToString(raw[:])
	return &ConsumerMember{
		cfg:        cfg,
		coord:      newCoordinator(cfg.Dialer, cfg.Brokers, cfg.Group),
		commit:     newCoordinator(cfg.Dialer, cfg.Brokers, cfg.Group),
		log:        log.With("group", cfg.Group, "group_protocol", "consumer"),
		id:         id,
		current:    newCurrent(id),
		subscribed: slices.Sorted(slices.Values(cfg.Topics)),
		interval:   5 * time.Second, // until the coordinator says
		session:    defaultConsumerSession,
	}
}

func (m *ConsumerMember) setEpoch(epoch int32) { m.set(epoch, m.id) }

// CommitOffsets stores offsets with the given member epoch in one
// OffsetCommit v9 request and returns each one's answer, in order;
// refusals come back as their error: ErrStaleMemberEpoch (the epoch moved
// on: send again with the current one), ErrFencedMemberEpoch or
// kafka.UnknownMemberId (the partition is not this member's any more).
// err is the request's own failure (no answer).
func (m *ConsumerMember) CommitOffsets(ctx context.Context, epoch int32, offsets []wire.CommitOffset) ([]error, error) {
	req := wire.OffsetCommit{Group: m.cfg.Group, MemberID: m.id, InstanceID: m.cfg.InstanceID, Epoch: epoch, Offsets: offsets}
	body, err := m.commit.Exchange(ctx, wire.APIOffsetCommit, wire.OffsetCommitMemberVersion, true, req.Encode())
	if err != nil {
		return nil, err
	}
	type tp struct {
		topic     string
		partition int32
	}
	codes := map[tp]int16{}
	if err := wire.DecodeOffsetCommitAnswers(body, func(t string, p int32, c int16) { codes[tp{t, p}] = c }); err != nil {
		return nil, fmt.Errorf("OffsetCommit v9 answer: %w", err)
	}
	errs := make([]error, len(offsets))
	moved := false
	for i, o := range offsets {
		code, ok := codes[tp{o.Topic, o.Partition}]
		if !ok {
			code = -1 // UNKNOWN_SERVER_ERROR: the answer does not name it
		}
		moved = moved || conn.Moved(kafka.Error(code))
		errs[i] = brokerError(code, "")
	}
	if moved {
		m.commit.Reset()
	}
	return errs, nil
}

// Run joins the group and follows its assignment until ctx ends, handing
// partitions to h. At the end it stops what it owns (h.Revoke: written
// and committed) and leaves: a dynamic member for good, a static one as
// "back soon" (epoch -2), so a restart within the session timeout takes
// its partitions back with no rebalance, unless LeaveOnShutdown. Run
// returns nil when ctx ended, and an error only when joining again cannot
// help.
func (m *ConsumerMember) Run(ctx context.Context, h Handler) error {
	defer m.coord.Reset()
	defer m.commit.Reset()
	m.warnRackBlind(ctx)
	owned := Assignment{}
	epoch := wire.EpochJoin
	backoff := conn.Backoff{Min: retryBackoff, Max: maxRetryBackoff}
	m.lastOK = time.Now()
	var hold holdBack
	var joinedAt time.Time
	for {
		if ctx.Err() != nil {
			return m.stop(h, owned, epoch)
		}
		ans, err := m.beat(ctx, epoch, owned)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return m.stop(h, owned, epoch)
		case errors.Is(err, ErrFencedMemberEpoch), errors.Is(err, kafka.UnknownMemberId):
			m.lose(h, owned, err)
			owned, epoch = Assignment{}, wire.EpochJoin
			continue
		case errors.Is(err, errUnreleasedInstanceID):
			// The coordinator keeps the member that holds the instance id
			// and refuses the newcomer (KIP-848; the Java consumer stops
			// too). Asking again would only wait for the holder's session
			// to end, and a twin's never does.
			h.Lose(owned)
			return m.unreleased(err)
		case errors.Is(err, kafka.FencedInstanceID):
			// A newer process took the id over: every heartbeat of this
			// one is refused from now on, so retrying until the session
			// ends would only keep writing partitions that are another's.
			h.Lose(owned)
			return m.fencedInstance(err)
		case fatalConsumerError(err):
			h.Lose(owned)
			return m.refusalConsumer(err)
		case !errors.Is(err, wire.ErrMalformed) && time.Since(m.lastOK) >= m.session && owned.Count() > 0:
			m.lose(h, owned, fmt.Errorf("%w: no heartbeat answered for %s, the group's session: %w", errLost, m.session, err))
			owned, epoch = Assignment{}, wire.EpochJoin
		default:
			m.log.Warn("heartbeat failed; trying again", "err", err)
		}
		if err != nil {
			// Try again no later than the session's end, so the partitions
			// are counted lost when the coordinator gives them away.
			wait := backoff.Next()
			if owned.Count() > 0 {
				wait = max(min(wait, time.Until(m.lastOK.Add(m.session))), time.Millisecond)
			}
			if !clock.Sleep(ctx, wait) {
				return m.stop(h, owned, epoch)
			}
			continue
		}
		backoff.Reset()
		joined := epoch == wire.EpochJoin
		if joined {
			m.readSession(ctx)
			hold, joinedAt = holdBack{}, time.Now()
		}
		epoch = ans.Epoch
		if ans.Assignment != nil {
			target, err := m.names(ctx, ans.Assignment)
			if err != nil {
				m.log.Warn("the assignment names topics this member cannot name yet; asking again", "err", err)
				if !clock.Sleep(ctx, backoff.Next()) {
					return m.stop(h, owned, epoch)
				}
				continue
			}
			switch {
			case joined && m.alone(target):
				hold = m.holdFirst(target)
			case hold.holding():
				hold.held = target
			default:
				if e, changed := m.reconcile(ctx, h, owned, target, epoch); changed {
					owned, epoch = target, e
					continue // acknowledge at once: the new owners wait for it
				}
			}
		}
		if hold.holding() {
			if wait := time.Until(hold.until); wait > 0 {
				// Heartbeat at the interval, and once more at the end, so
				// the held assignment is the coordinator's latest.
				if !clock.Sleep(ctx, min(m.interval, wait)) {
					return m.stop(h, owned, epoch)
				}
				continue
			}
			target := hold.held
			m.log.Info("initial rebalance delay over: starting what the group gives this member now",
				"partitions", target.Count(), "held_first", hold.first)
			hold = holdBack{}
			if e, changed := m.reconcile(ctx, h, owned, target, epoch); changed {
				owned, epoch = target, e
				continue
			}
		}
		if !clock.Sleep(ctx, m.nextBeat(owned, joinedAt)) {
			return m.stop(h, owned, epoch)
		}
	}
}

// beat sends one heartbeat and keeps the schedule: an answer moves the
// epoch, the interval and the time the session counts from (the sending,
// as the coordinator's timer starts when it reads the request).
func (m *ConsumerMember) beat(ctx context.Context, epoch int32, owned Assignment) (wire.ConsumerHeartbeatAnswer, error) {
	sent := time.Now()
	ans, err := m.heartbeat(ctx, epoch, owned)
	if err == nil {
		err = brokerError(ans.ErrorCode, ans.ErrorMessage)
		if conn.Moved(err) {
			m.coord.Reset()
		}
	}
	if err != nil {
		return ans, err
	}
	m.lastOK = sent
	m.setEpoch(ans.Epoch)
	if ans.HeartbeatIntervalMS > 0 {
		m.interval = time.Duration(ans.HeartbeatIntervalMS) * time.Millisecond
	}
	return ans, nil
}

// unreleased is the end of a member whose instance id another member
// holds: a twin, or this pod's predecessor that died without leaving
// (SIGKILL, OOM), which the broker drops at its session timeout.
func (m *ConsumerMember) unreleased(err error) error {
	return fmt.Errorf("%w: group %s refused kafka.group_instance_id %q (%w): a running member holds it. Give each pod its own id (${POD_NAME} on a StatefulSet); "+
		"if this pod's previous process died without stopping, the broker releases the id after the group's session (%s) and a restart then joins",
		ErrFencedInstance, m.cfg.Group, m.cfg.InstanceID, err, m.session)
}

// fencedInstance is the end of a member whose instance id a newer member
// took over.
func (m *ConsumerMember) fencedInstance(err error) error {
	return fmt.Errorf("%w: group %s gave kafka.group_instance_id %q to another process (%w); this one stops. "+
		"Give each pod its own id (${POD_NAME} on a StatefulSet), or stop the other process",
		ErrFencedInstance, m.cfg.Group, m.cfg.InstanceID, err)
}

// reconcile moves from owned to target: stop what left (committed while
// still owned), start what came, heartbeating throughout. It returns the
// epoch the heartbeats meanwhile reached and whether anything changed.
func (m *ConsumerMember) reconcile(ctx context.Context, h Handler, owned, target Assignment, epoch int32) (int32, bool) {
	revoked := owned.Minus(target)
	added := target.Minus(owned)
	if revoked.Count() == 0 && added.Count() == 0 {
		return epoch, false
	}
	g := Generation{ID: epoch, MemberID: m.id, Protocol: "consumer", Cooperative: true,
		Assigned: target.Clone(), Added: added, Revoked: revoked, Moved: revoked.Count() + added.Count()}
	m.log.Info("generation", "epoch", epoch, "member", m.id, "protocol", "consumer",
		"partitions", target.Count(), "added", added.Count(), "revoked", revoked.Count(), "moved", g.Moved,
		"assigned", map[string][]int(target))
	if revoked.Count() > 0 {
		gone := m.deletedOf(ctx, revoked)
		epoch = m.beatWhile(ctx, "revoking", func() {
			if gone.Count() > 0 {
				h.Lose(gone) // nothing to commit to a topic that is no more
			}
			if rest := revoked.Minus(gone); rest.Count() > 0 {
				h.Revoke(rest)
			}
		}, epoch, owned)
	}
	// What came is acknowledged only once started: until then the
	// heartbeats name what the member kept.
	epoch = m.beatWhile(ctx, "assigning", func() { h.Assign(g) }, epoch, owned.Minus(revoked))
	return epoch, true
}

// beatWhile runs the job's side of a change (fn) while heartbeats go on at
// the coordinator's interval: the member still owns what it reports, and
// a silent member is fenced when its session ends. An answer's assignment
// is left for the acknowledging heartbeat after fn, which gets the whole
// assignment again (every heartbeat is a full one). It returns the epoch
// the answers reached.
func (m *ConsumerMember) beatWhile(ctx context.Context, doing string, fn func(), epoch int32, owned Assignment) int32 {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	t := time.NewTimer(m.interval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return epoch
		case <-t.C:
			if ans, err := m.beat(context.WithoutCancel(ctx), epoch, owned); err != nil {
				m.log.Warn("heartbeat while "+doing+" failed", "err", err)
			} else {
				epoch = ans.Epoch
			}
			t.Reset(m.interval)
		}
	}
}

// heartbeat sends one ConsumerGroupHeartbeat with the whole state.
func (m *ConsumerMember) heartbeat(ctx context.Context, epoch int32, owned Assignment) (wire.ConsumerHeartbeatAnswer, error) {
	ids, err := m.ids(ctx, owned)
	if err != nil {
		return wire.ConsumerHeartbeatAnswer{}, err
	}
	req := wire.ConsumerHeartbeat{Group: m.cfg.Group, MemberID: m.id, Epoch: epoch, InstanceID: m.cfg.InstanceID, Rack: m.cfg.Rack,
		RebalanceTimeoutMS: int32(m.cfg.RebalanceTimeout / time.Millisecond), Topics: m.subscription(),
		Assignor: m.cfg.Assignor, Owned: ids}
	hctx, cancel := context.WithTimeout(ctx, min(m.session, heartbeatTimeout))
	defer cancel()
	body, err := m.coord.Exchange(hctx, wire.APIConsumerGroupHeartbeat, wire.ConsumerHeartbeatVersion, true, req.Encode())
	if err != nil {
		return wire.ConsumerHeartbeatAnswer{}, fmt.Errorf("ConsumerGroupHeartbeat: %w", err)
	}
	ans, err := wire.DecodeConsumerHeartbeatAnswer(body)
	if err != nil {
		return wire.ConsumerHeartbeatAnswer{}, fmt.Errorf("ConsumerGroupHeartbeat answer: %w", err)
	}
	return ans, nil
}

// ids names owned by topic id.
func (m *ConsumerMember) ids(ctx context.Context, owned Assignment) (wire.TopicPartitions, error) {
	out := wire.TopicPartitions{}
	for t, ps := range owned {
		id, ok := m.topicID(t)
		if !ok {
			if err := m.refresh(ctx); err != nil {
				return nil, err
			}
			if id, ok = m.topicID(t); !ok {
				return nil, fmt.Errorf("topic %s has no id in the metadata", t)
			}
		}
		for _, p := range ps {
			out[id] = append(out[id], int32(p))
		}
	}
	return out, nil
}

func (m *ConsumerMember) topicID(topic string) ([16]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id, ok := m.topics.ids[topic]
	return id, ok
}

// names names an assignment's topics; an id it does not know (a topic
// recreated) makes it ask for the metadata again.
func (m *ConsumerMember) names(ctx context.Context, tps wire.TopicPartitions) (Assignment, error) {
	out := Assignment{}
	for id, ps := range tps {
		m.mu.Lock()
		name, ok := m.topics.names[id]
		m.mu.Unlock()
		if !ok {
			if err := m.refresh(ctx); err != nil {
				return nil, err
			}
			m.mu.Lock()
			name, ok = m.topics.names[id]
			m.mu.Unlock()
			if !ok {
				return nil, fmt.Errorf("no topic has id %x", id)
			}
		}
		for _, p := range ps {
			out[name] = append(out[name], int(p))
		}
	}
	return out.Clone(), nil
}

// refresh reads the subscription's metadata. A topic the brokers no
// longer know leaves the subscription, loudly; its id stays known, so the
// partitions still owned of it can be named until they are let go of.
func (m *ConsumerMember) refresh(ctx context.Context) error {
	md, err := m.describe(ctx, m.subscription())
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, name := range m.topics.names {
		if _, ok := md.ids[name]; !ok && slices.Contains(md.gone, name) {
			md.names[id], md.ids[name] = name, id
		}
	}
	m.topics = md
	for _, t := range md.gone {
		i := slices.Index(m.subscribed, t)
		switch {
		case i < 0:
		case len(m.subscribed) == 1:
			m.log.Error("the job's last input topic was deleted: nothing is left to read until it is created again", "topic", t)
		default:
			m.subscribed = slices.Delete(m.subscribed, i, i+1)
			m.log.Error("an input topic was deleted: it leaves the subscription and the other topics go on; create it again and restart the job to read it",
				"topic", t, "subscribed", m.subscribed)
		}
	}
	return nil
}

// subscription is the topics the member asks for.
func (m *ConsumerMember) subscription() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.subscribed)
}

// deletedOf is the part of ps whose topics were deleted: the coordinator
// takes a deleted topic out of every assignment, so a revoke is when to
// ask. Metadata that cannot be read counts nothing as deleted.
func (m *ConsumerMember) deletedOf(ctx context.Context, ps Assignment) Assignment {
	if err := m.refresh(ctx); err != nil {
		m.log.Warn("metadata of the subscription unreadable; revoking as usual", "err", err)
		return Assignment{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	gone := Assignment{}
	for t, p := range ps {
		if slices.Contains(m.topics.gone, t) {
			gone[t] = slices.Clone(p)
		}
	}
	return gone
}

// lose stops what the member owned after the group dropped it.
func (m *ConsumerMember) lose(h Handler, owned Assignment, why error) {
	if owned.Count() > 0 {
		m.log.Warn("partitions lost: the group gave them to others; stopping them without committing", "partitions", owned.Count(), "err", why)
		h.Lose(owned)
	}
	m.setEpoch(-1)
}

// stop is the end of Run: commit what is owned, then leave.
func (m *ConsumerMember) stop(h Handler, owned Assignment, epoch int32) error {
	if owned.Count() > 0 {
		epoch = m.beatWhile(context.Background(), "revoking", func() { h.Revoke(owned) }, epoch, owned)
	}
	if epoch <= 0 {
		return nil // never joined, or already out
	}
	leave, how := wire.EpochLeave, "left the group"
	if m.cfg.InstanceID != "" && !m.cfg.LeaveOnShutdown {
		leave, how = wire.EpochLeaveStatic, "static member stopping: a restart within the session timeout takes its partitions back with no rebalance"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ans, err := m.heartbeat(ctx, leave, nil)
	if err == nil {
		err = brokerError(ans.ErrorCode, ans.ErrorMessage)
	}
	if err != nil {
		m.log.Warn("leaving the group failed; the coordinator drops this member after its session timeout", "err", err)
		return nil
	}
	m.setEpoch(-1)
	m.log.Info(how, "member", m.id, "instance", m.cfg.InstanceID)
	return nil
}

// fatalConsumerError says joining again cannot change the answer.
func fatalConsumerError(err error) bool {
	for _, e := range []error{errUnsupportedAssignor, errUnsupportedVersion, errInvalidRequest, errTopicAuthorization, errGroupIDNotFound,
		kafka.GroupAuthorizationFailed, kafka.GroupMaxSizeReached, kafka.InconsistentGroupProtocol, kafka.UnsupportedVersion} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// refusalConsumer says what to do about a fatal answer.
func (m *ConsumerMember) refusalConsumer(err error) error {
	switch {
	case errors.Is(err, errUnsupportedAssignor):
		return fmt.Errorf("group %s: the brokers have no assignor %q (%w); set kafka.group_remote_assignor to one in their group.consumer.assignors (uniform, range)", m.cfg.Group, m.cfg.Assignor, err)
	case errors.Is(err, errUnsupportedVersion), errors.Is(err, kafka.UnsupportedVersion):
		return fmt.Errorf("group %s: the brokers do not serve ConsumerGroupHeartbeat v1 (%w): it needs Kafka 4.0 or later; set kafka.group_protocol: classic", m.cfg.Group, err)
	case errors.Is(err, kafka.InconsistentGroupProtocol):
		return fmt.Errorf("group %s: %w: the group's members speak the classic protocol; run every member with the same kafka.group_protocol, or use another kafka.group", m.cfg.Group, err)
	}
	return fmt.Errorf("group %s: ConsumerGroupHeartbeat: %w", m.cfg.Group, err)
}
