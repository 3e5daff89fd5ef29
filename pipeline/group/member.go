package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/heartbeat"
	"github.com/segmentio/kafka-go/protocol/joingroup"
	"github.com/segmentio/kafka-go/protocol/leavegroup"
	"github.com/segmentio/kafka-go/protocol/syncgroup"

	"github.com/logstore/logstore/internal/clock"

	"github.com/logstore/logstore/pipeline/group/wire"
)

// Config is a member's settings.
type Config struct {
	Group  string
	Topics []string
	// InstanceID makes the member static (KIP-345); "" is a dynamic member.
	InstanceID string
	// LeaveOnShutdown makes a static member leave at its stop (LeaveGroup
	// by instance id, as KIP-1092's close does for Streams), so a scale-in
	// moves its partitions at once instead of after the session timeout.
	LeaveOnShutdown bool
	Brokers         []string
	Dialer          *kafka.Dialer // TLS, SASL, client id
	// Client answers Metadata: the partitions the leader plans and the
	// partition counts every member watches.
	Client *kafka.Client
	// Assignor plans the assignment when this member leads the group.
	Assignor kafka.GroupBalancer
	// Eager offers only the eager protocol: every member lets go of every
	// partition at every rebalance, as kafka-go's ConsumerGroup does.
	Eager bool

	SessionTimeout, RebalanceTimeout, HeartbeatInterval time.Duration
	// PartitionWatch is how often the member looks for partitions added to
	// its topics (a rebalance follows); 0 is 5s.
	PartitionWatch time.Duration
	Log            *slog.Logger
}

// Generation is what a member learnt from one rebalance.
type Generation struct {
	ID       int32
	MemberID string
	Leader   bool
	Protocol string
	// Cooperative: the member kept what it keeps; Eager: it let go of
	// everything before joining, and Added is all of Assigned.
	Cooperative bool
	Assigned    Assignment // every partition the member owns in it
	Added       Assignment // not owned before the rebalance
	Revoked     Assignment // owned before, given to others
	// Moved counts the partitions that came to or left this member since
	// its last generation; under eager, a partition let go of and given
	// back does not count.
	Moved int
	// followUp: the leader withheld partitions for a follow-up round.
	followUp bool
}

// Handler is what the member's owner does as partitions come and go.
type Handler interface {
	// Assign starts g.Added.
	Assign(g Generation)
	// Revoke stops the partitions and returns once every one of them is
	// committed or given up, while the group still counts this member as
	// their owner: only then may another member read them.
	Revoke(ps Assignment)
	// Lose stops the partitions without committing: the group already
	// gave them away (this member's session ended) or fenced it.
	Lose(ps Assignment)
}

// ErrFencedInstance is the end of a static member whose instance id
// another process took (FENCED_INSTANCE_ID) or, on the next-generation
// protocol, holds (UNRELEASED_INSTANCE_ID): two members run with one
// kafka.group_instance_id.
var ErrFencedInstance = errors.New("fenced: another member runs with this member's group instance id")

// errLost says the group no longer counts this member (UNKNOWN_MEMBER_ID,
// ILLEGAL_GENERATION): its partitions are someone else's.
var errLost = errors.New("the group no longer counts this member")

// fatalError is a group answer that joining again cannot change.
type fatalError struct{ err error }

func (e fatalError) Error() string { return e.err.Error() }
func (e fatalError) Unwrap() error { return e.err }

// Member is one consumer group member on the classic protocol.
type Member struct {
	cfg   Config
	coord coordinator
	log   *slog.Logger

	current

	mu     sync.Mutex
	eager  bool // the current generation's protocol is eager
	leader bool
}

// New returns a member; Run joins.
func New(cfg Config) *Member {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	if cfg.PartitionWatch <= 0 {
		cfg.PartitionWatch = 5 * time.Second
	}
	return &Member{
		cfg:     cfg,
		coord:   coordinator{dialer: cfg.Dialer, seeds: cfg.Brokers, group: cfg.Group},
		log:     log.With("group", cfg.Group),
		current: newCurrent(""),
		eager:   true, // until a cooperative generation: owning nothing, nothing to let go of
	}
}

// Run joins the group and follows its rebalances until ctx ends, handing
// partitions to h. At the end the member stops what it owns (h.Revoke,
// with heartbeats going on while the partitions are committed) and, when
// dynamic, leaves the group so its partitions move at once. A static
// member does not leave: that is what static means (the Java consumer's
// close sends no LeaveGroup for a member with group.instance.id), so a
// restart within the session timeout gets the same partitions with no
// rebalance. Run returns nil when ctx ended, and an error only when
// joining again cannot help (ErrFencedInstance, a refused configuration).
func (m *Member) Run(ctx context.Context, h Handler) error {
	defer m.coord.reset()
	owned := Assignment{}
	backoff := retryBackoff
	for {
		if ctx.Err() != nil {
			return m.stop(h, owned, nil)
		}
		prev := owned
		if m.isEager() && owned.Count() > 0 {
			// Eager: let go of everything before joining, as the leader may
			// give any of it to another member at once.
			h.Revoke(owned)
			owned = Assignment{}
		}
		g, err := m.join(ctx, owned, prev)
		if err != nil {
			if ctx.Err() != nil {
				return m.stop(h, owned, nil)
			}
			var fatal fatalError
			if errors.As(err, &fatal) {
				h.Lose(owned)
				return fatal.err
			}
			if errors.Is(err, errLost) {
				m.lose(h, owned, err)
				owned = Assignment{}
			}
			if errors.Is(err, kafka.RebalanceInProgress) {
				// Members starting together: the protocol at work, not a failure.
				m.log.Info("the group is rebalancing (a member joined or left); joining again", "err", err, "backoff", backoff)
			} else {
				m.log.Warn("joining the group failed; joining again", "err", err, "backoff", backoff)
			}
			if !clock.Sleep(ctx, backoff) {
				return m.stop(h, owned, nil)
			}
			backoff = min(2*backoff, maxRetryBackoff)
			continue
		}
		backoff = retryBackoff
		g.Revoked = owned.Minus(g.Assigned)
		g.Added = g.Assigned.Minus(owned)
		g.Moved = prev.Minus(g.Assigned).Count() + g.Assigned.Minus(prev).Count()
		m.log.Info("generation", "generation", g.ID, "member", g.MemberID, "leader", g.Leader, "protocol", g.Protocol,
			"partitions", g.Assigned.Count(), "added", g.Added.Count(), "revoked", g.Revoked.Count(), "moved", g.Moved,
			"follow_up", g.followUp, "assigned", map[string][]int(g.Assigned))
		beats := m.heartbeat(g)
		h.Assign(g)
		if g.Revoked.Count() > 0 {
			h.Revoke(g.Revoked)
		}
		owned = g.Assigned
		if g.Cooperative && (g.Revoked.Count() > 0 || g.followUp) {
			// KIP-429's follow-up: rejoin at once so the partitions let go
			// of reach their new owners; the members that let go of
			// nothing too, when the leader says a follow-up is due.
			beats.stop()
			continue
		}
		why := m.stable(ctx, beats)
		switch {
		case errors.Is(why, context.Canceled), errors.Is(why, context.DeadlineExceeded):
			return m.stop(h, owned, beats)
		case errors.Is(why, ErrFencedInstance):
			beats.stop()
			h.Lose(owned)
			return why
		case errors.Is(why, errLost):
			beats.stop()
			m.lose(h, owned, why)
			owned = Assignment{}
		default:
			beats.stop()
			m.log.Info("rejoining the group", "reason", why)
		}
	}
}

// Waits between failed joins, doubling up to the maximum: on a new
// cluster the first JoinGroup fails with COORDINATOR_NOT_AVAILABLE for a
// few hundred milliseconds while __consumer_offsets is made.
const (
	retryBackoff    = 250 * time.Millisecond
	maxRetryBackoff = 5 * time.Second
)

func (m *Member) isEager() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.eager
}

// lose stops what the member owned after the group dropped it, and starts
// over as a new member (a static one keeps its instance id).
func (m *Member) lose(h Handler, owned Assignment, why error) {
	if owned.Count() > 0 {
		m.log.Warn("partitions lost: the group gave them to others; stopping them without committing", "partitions", owned.Count(), "err", why)
		h.Lose(owned)
	}
	m.set(-1, "")
	m.mu.Lock()
	m.eager = true
	m.mu.Unlock()
}

// stop is the end of Run: stop what is owned while heartbeats go on, then
// leave unless static.
func (m *Member) stop(h Handler, owned Assignment, beats *beater) error {
	if owned.Count() > 0 {
		h.Revoke(owned)
	}
	if beats != nil {
		beats.stop()
	}
	_, id := m.Current()
	if id == "" {
		return nil
	}
	if m.cfg.InstanceID != "" && !m.cfg.LeaveOnShutdown {
		m.log.Info("static member stopping without leaving the group: a restart within the session timeout takes its partitions back with no rebalance",
			"instance", m.cfg.InstanceID, "session_timeout", m.cfg.SessionTimeout)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// LeaveGroup v3 names members in a list; kafka-go lays its answer out
	// with the error before the throttle time, so it is read here. A
	// static member is named by its instance id too (KIP-345): the
	// coordinator removes it only when both match.
	leaving := leavegroup.RequestMember{MemberID: id, GroupInstanceID: m.cfg.InstanceID}
	body, err := m.coord.raw(ctx, 3, &leavegroup.Request{GroupID: m.cfg.Group, Members: []leavegroup.RequestMember{leaving}})
	if err == nil {
		err = m.coord.answered(wire.ErrorCode(body))
	}
	if err == nil {
		err = m.coord.answered(wire.LeftMemberCode(body))
	}
	if err != nil {
		m.log.Warn("leaving the group failed; the coordinator drops this member after the session timeout", "err", err, "session_timeout", m.cfg.SessionTimeout)
		return nil
	}
	m.log.Info("left the group", "member", id, "instance", m.cfg.InstanceID)
	return nil
}

// protocols is what the member offers in JoinGroup, in its order of
// preference: the cooperative protocol, then the eager one a group with
// members of kafka-go's days can agree on.
func (m *Member) protocols(owned, had Assignment) []joingroup.RequestProtocol {
	if s, ok := m.cfg.Assignor.(interface{ SetOwned(map[string][]int) }); ok {
		s.SetOwned(had) // the assignor's user data: partitions stay where they are
	}
	userData, err := m.cfg.Assignor.UserData()
	if err != nil {
		m.log.Warn("the assignor's user data could not be made; joining without it", "err", err)
	}
	topics := slices.Sorted(slices.Values(m.cfg.Topics))
	name := m.cfg.Assignor.ProtocolName()
	eager := joingroup.RequestProtocol{Name: name, Metadata: wire.Subscription{Version: wire.EagerVersion, Topics: topics, UserData: userData}.Encode()}
	if m.cfg.Eager {
		return []joingroup.RequestProtocol{eager}
	}
	gen, _ := m.Current()
	coop := wire.Subscription{Version: wire.CooperativeVersion, Topics: topics, UserData: userData, Owned: owned, Generation: gen}
	return []joingroup.RequestProtocol{{Name: cooperativeName(name), Metadata: coop.Encode()}, eager}
}

// cooperativeName is the cooperative variant of an assignor's protocol.
func cooperativeName(eager string) string { return eager + "-cooperative" }

// join runs one JoinGroup and SyncGroup round. owned is what the member
// holds now; had what it held in the last generation, which the
// assignor's user data announces so an eager plan stays sticky too.
func (m *Member) join(ctx context.Context, owned, had Assignment) (Generation, error) {
	for {
		_, memberID := m.Current()
		req := &joingroup.Request{
			GroupID:            m.cfg.Group,
			SessionTimeoutMS:   int32(m.cfg.SessionTimeout / time.Millisecond),
			RebalanceTimeoutMS: int32(m.cfg.RebalanceTimeout / time.Millisecond),
			MemberID:           memberID,
			GroupInstanceID:    m.cfg.InstanceID,
			ProtocolType:       "consumer",
			Protocols:          m.protocols(owned, had),
		}
		// The coordinator holds JoinGroup until every member joined, up to
		// the rebalance timeout.
		jctx, cancel := context.WithTimeout(ctx, m.cfg.RebalanceTimeout+5*time.Second)
		msg, err := m.coord.request(jctx, req)
		cancel()
		if err != nil {
			return Generation{}, fmt.Errorf("JoinGroup: %w", err)
		}
		res := msg.(*joingroup.Response)
		err = m.coord.answered(res.ErrorCode)
		switch {
		case err == nil:
		case errors.Is(err, kafka.MemberIDRequired):
			// KIP-394: the broker named our member id; join again with it.
			// Logged, so that the broker's lines about this id (a member
			// that failed, left) can be traced to this process.
			m.log.Info("the coordinator named this member", "member", res.MemberID, "instance", m.cfg.InstanceID)
			m.set(-1, res.MemberID)
			continue
		case errors.Is(err, kafka.UnknownMemberId):
			return Generation{}, fmt.Errorf("JoinGroup: %w: %w", errLost, err)
		default:
			return Generation{}, m.refusal("JoinGroup", err)
		}
		return m.sync(ctx, res)
	}
}

// refusal sorts an error answer into what joining again can fix and what
// it cannot.
func (m *Member) refusal(request string, err error) error {
	switch {
	case errors.Is(err, kafka.FencedInstanceID):
		return fatalError{fmt.Errorf("%w: %s answered FENCED_INSTANCE_ID for kafka.group_instance_id %q in group %s: two processes run with one instance id "+
			"(give each pod its own, ${POD_NAME} on a StatefulSet, and do not run static ids in a Deployment with maxSurge); this one stopped without committing",
			ErrFencedInstance, request, m.cfg.InstanceID, m.cfg.Group)}
	case errors.Is(err, kafka.InconsistentGroupProtocol):
		return fatalError{fmt.Errorf("%s: group %s: %w: its members offer no common assignor (rack.balancer differs between them, or another application uses the group id); "+
			"give every member the same rack.balancer, or use another kafka.group", request, m.cfg.Group, err)}
	case errors.Is(err, kafka.GroupMaxSizeReached), errors.Is(err, kafka.InvalidSessionTimeout), errors.Is(err, kafka.GroupAuthorizationFailed):
		return fatalError{fmt.Errorf("%s: group %s: %w", request, m.cfg.Group, err)}
	case errors.Is(err, kafka.IllegalGeneration), errors.Is(err, kafka.UnknownMemberId):
		return fmt.Errorf("%s: %w: %w", request, errLost, err)
	}
	return fmt.Errorf("%s: %w", request, err)
}

// sync sends SyncGroup, with the plan when this member leads.
func (m *Member) sync(ctx context.Context, joined *joingroup.Response) (Generation, error) {
	coop := joined.ProtocolName != "" && joined.ProtocolName == cooperativeName(m.cfg.Assignor.ProtocolName())
	g := Generation{ID: joined.GenerationID, MemberID: joined.MemberID, Leader: joined.LeaderID == joined.MemberID, Protocol: joined.ProtocolName, Cooperative: coop}
	req := &syncgroup.Request{
		GroupID: m.cfg.Group, GenerationID: g.ID, MemberID: g.MemberID, GroupInstanceID: m.cfg.InstanceID,
		ProtocolType: "consumer", ProtocolName: joined.ProtocolName,
	}
	if g.Leader {
		plan, err := m.plan(ctx, joined.Members, coop)
		if err != nil {
			return Generation{}, err
		}
		req.Assignments = plan
	}
	// The coordinator holds the followers' SyncGroup until the leader's.
	sctx, cancel := context.WithTimeout(ctx, m.cfg.RebalanceTimeout+5*time.Second)
	defer cancel()
	msg, err := m.coord.request(sctx, req)
	if err != nil {
		return Generation{}, fmt.Errorf("SyncGroup: %w", err)
	}
	res := msg.(*syncgroup.Response)
	if err := m.coord.answered(res.ErrorCode); err != nil {
		if errors.Is(err, kafka.UnknownMemberId) {
			m.set(-1, "")
		}
		return Generation{}, m.refusal("SyncGroup", err)
	}
	a, rejoin, err := wire.DecodeAssignment(res.Assignments)
	g.followUp = coop && rejoin
	if err != nil {
		return Generation{}, fmt.Errorf("SyncGroup: the leader's assignment: %w", err)
	}
	g.Assigned = Assignment(a).Clone()
	m.mu.Lock()
	m.eager, m.leader = !coop, g.Leader
	m.mu.Unlock()
	m.set(g.ID, g.MemberID)
	return g, nil
}

// plan is the leader's work: every member's assignment.
func (m *Member) plan(ctx context.Context, joined []joingroup.ResponseMember, coop bool) ([]syncgroup.RequestAssignment, error) {
	members := make([]kafka.GroupMember, 0, len(joined))
	var claims []claim
	var topics []string
	for _, jm := range joined {
		s, err := wire.DecodeSubscription(jm.Metadata)
		if err != nil {
			m.log.Warn("a member's subscription could not be read; it is given nothing", "member", jm.MemberID, "err", err)
		}
		members = append(members, kafka.GroupMember{ID: jm.MemberID, Topics: s.Topics, UserData: s.UserData})
		claims = append(claims, claim{member: jm.MemberID, owned: s.Owned, generation: s.Generation})
		topics = append(topics, s.Topics...)
	}
	slices.Sort(topics)
	partitions, err := m.partitions(ctx, slices.Compact(topics))
	if err != nil {
		return nil, fmt.Errorf("planning the assignment: %w", err)
	}
	plan := map[string]Assignment{}
	for id, byTopic := range m.cfg.Assignor.AssignGroups(members, partitions) {
		plan[id] = Assignment(byTopic).Clone()
	}
	moving := 0
	if coop {
		moving = withhold(plan, claims)
	}
	m.log.Info("assignment planned", "members", len(members), "partitions", len(partitions), "moving", moving)
	out := make([]syncgroup.RequestAssignment, 0, len(joined))
	for _, jm := range joined {
		out = append(out, syncgroup.RequestAssignment{MemberID: jm.MemberID, Assignment: wire.EncodeAssignment(plan[jm.MemberID], moving > 0)})
	}
	return out, nil
}

// partitions lists the topics' partitions with their replicas' racks. A
// topic the metadata names with an error is left out, with a warning: the
// other topics are still read.
func (m *Member) partitions(ctx context.Context, topics []string) ([]kafka.Partition, error) {
	if len(topics) == 0 {
		return nil, nil
	}
	md, err := m.cfg.Client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, err
	}
	var out []kafka.Partition
	for _, t := range md.Topics {
		if t.Error != nil {
			m.log.Warn("topic left out of the assignment", "topic", t.Name, "err", t.Error)
			continue
		}
		out = append(out, t.Partitions...)
	}
	return out, nil
}

// partitionCounts is the number of partitions of each subscribed topic.
func (m *Member) partitionCounts(ctx context.Context) (map[string]int, error) {
	ps, err := m.partitions(ctx, m.cfg.Topics)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, p := range ps {
		out[p.Topic]++
	}
	return out, nil
}

// stable waits in a generation until it ends: ctx ends, the heartbeat says
// the group rebalances or dropped the member, or a topic got partitions
// (then the member rejoins, so the leader plans them).
func (m *Member) stable(ctx context.Context, beats *beater) error {
	counts, _ := m.partitionCounts(ctx)
	watch := time.NewTicker(m.cfg.PartitionWatch)
	defer watch.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-beats.ended:
			return err
		case <-watch.C:
			now, err := m.partitionCounts(ctx)
			if err != nil || counts == nil {
				counts = now
				continue
			}
			for t, n := range now {
				if n != counts[t] {
					return fmt.Errorf("topic %s has %d partitions, %d before", t, n, counts[t])
				}
			}
		}
	}
}

// heartbeatTimeout bounds one Heartbeat: the coordinator answers at once,
// so a longer wait means it or the path to it is gone.
const heartbeatTimeout = 10 * time.Second

// beater sends the generation's heartbeats until stopped, and reports on
// ended why the generation is over.
type beater struct {
	ended chan error
	quit  chan struct{}
	done  chan struct{}
}

func (b *beater) stop() {
	select {
	case <-b.quit:
	default:
		close(b.quit)
	}
	<-b.done
}

// heartbeat starts the generation's heartbeats. They go on while the
// member's owner commits revoked partitions, since a member silent for the
// session timeout is dropped. Heartbeat v3 carries the instance id, so a
// fenced twin hears FENCED_INSTANCE_ID rather than UNKNOWN_MEMBER_ID;
// kafka-go reads its answer in the wrong order, so it is read here.
func (m *Member) heartbeat(g Generation) *beater {
	b := &beater{ended: make(chan error, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		lastOK := time.Now()
		tick := time.NewTicker(m.cfg.HeartbeatInterval)
		defer tick.Stop()
		for {
			select {
			case <-b.quit:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), min(m.cfg.SessionTimeout, heartbeatTimeout))
			body, err := m.coord.raw(ctx, 3, &heartbeat.Request{GroupID: m.cfg.Group, GenerationID: g.ID, MemberID: g.MemberID, GroupInstanceID: m.cfg.InstanceID})
			cancel()
			if err == nil {
				err = m.coord.answered(wire.ErrorCode(body))
			}
			var end error
			switch {
			case err == nil:
				lastOK = time.Now()
				continue
			case errors.Is(err, kafka.RebalanceInProgress):
				end = errors.New("the group is rebalancing")
			case errors.Is(err, kafka.FencedInstanceID), errors.Is(err, kafka.IllegalGeneration), errors.Is(err, kafka.UnknownMemberId):
				end = m.refusal("Heartbeat", err)
				var fatal fatalError
				if errors.As(end, &fatal) {
					end = fatal.err
				}
			case time.Since(lastOK) >= m.cfg.SessionTimeout:
				end = fmt.Errorf("%w: no heartbeat answered for the session timeout (%s): %w", errLost, m.cfg.SessionTimeout, err)
			default:
				m.log.Warn("heartbeat failed; trying again", "err", err)
				continue
			}
			b.ended <- end
			return
		}
	}()
	return b
}
