package group

import "time"

// The consumer protocol has no initial rebalance delay. On the classic
// protocol a new (or emptied) group's coordinator waits
// group.initial.rebalance.delay.ms (3 s by default) for more members
// before the first assignment, so members started together share it from
// the start. Kafka 4.4's coordinator has that delay for classic groups and
// for streams groups (group.streams.initial.rebalance.delay.ms,
// KAFKA-19829 and KAFKA-19926) and none for consumer groups: it assigns
// every partition to the first member's first heartbeat, and moves them
// to the members that join a moment later only after that member hears of
// it, at its next heartbeat (group.consumer.heartbeat.interval.ms, 5 s)
// and lets go. Three members started together on a backlog: the first
// read 60–62 % of it, re-read in part by the others after the move
// (TestGroupMembersStartedTogetherShareTheBacklog).
//
// So the member does the broker's wait itself: when the first answer after
// a join gives it every partition of its subscription, it was alone in an
// empty group, and it holds that assignment back for InitialDelay,
// heartbeating (naming nothing owned) and starting nothing. The answers
// meanwhile carry what the coordinator gives it once the others joined;
// at the end the member starts what it has then. A member that joins a
// group with members gets part of the partitions at most (those that are
// free) and starts at once, as on the classic protocol. A lone static
// member restarting within its session is given every partition back and
// waits too, where the classic coordinator would not (its group is not
// empty): one delay per restart.
//
// Why the member and not the job: only the member sees the coordinator's
// answers, and holding back means not acknowledging, which the
// heartbeats must keep doing. Why "every partition" and not
// ConsumerGroupDescribe: the first answer is the coordinator's view at
// the join itself, while a describe a moment later may already count the
// members that joined since, and needs no further request or ACL.

// The members that joined during the delay are given their partitions
// only once the first has let go of them, at the delay's end, and hear of
// it at their next heartbeat; at the coordinator's interval (5 s) that is
// up to five seconds after, longer than the delay itself. So a member
// that joined and holds nothing heartbeats every joinPoll for the delay
// and two intervals more. A scale-out's newcomer likewise hears soon of
// the partitions an owner lets go of: the owner hears of the newcomer at
// its next heartbeat (within an interval) and acknowledges once it has
// committed (within another, mostly). The coordinator takes a heartbeat
// at any time: the Java consumer sends one at once to acknowledge an
// assignment.
const joinPoll = 500 * time.Millisecond

// nextBeat is the wait before the next heartbeat of a member that holds
// owned and last joined at joined.
func (m *ConsumerMember) nextBeat(owned Assignment, joined time.Time) time.Duration {
	if owned.Count() == 0 && time.Since(joined) < m.cfg.InitialDelay+2*m.interval {
		return min(joinPoll, m.interval)
	}
	return m.interval
}

// DefaultInitialDelay is the classic coordinator's
// group.initial.rebalance.delay.ms default.
const DefaultInitialDelay = 3 * time.Second

// holdBack is a first assignment held back: until is when the member
// starts what held has then; a zero until holds nothing.
type holdBack struct {
	until time.Time
	held  Assignment
	first int // partitions of the first answer, for the log
}

func (b holdBack) holding() bool { return !b.until.IsZero() }

// alone says whether target, the first assignment after a join, is every
// partition of the subscription the member knows of: nobody else was in
// the group for the assignor to give any to.
func (m *ConsumerMember) alone(target Assignment) bool {
	if m.cfg.InitialDelay <= 0 || target.Count() == 0 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.topics.partitions {
		if !target.Has(p.Topic, p.Partition) {
			return false
		}
	}
	return len(m.topics.partitions) > 0
}

// holdFirst starts holding target back.
func (m *ConsumerMember) holdFirst(target Assignment) holdBack {
	m.log.Info("alone in an empty group: holding the first assignment back so members starting with this one share it (kafka.group_initial_rebalance_delay)",
		"delay", m.cfg.InitialDelay, "partitions", target.Count())
	return holdBack{until: time.Now().Add(m.cfg.InitialDelay), held: target, first: target.Count()}
}
