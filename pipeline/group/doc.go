// Package group is logstore's consumer group member: Member on the classic
// group protocol, ConsumerMember on the next-generation one (KIP-848,
// consumer.go), both over internal/kafka/conn's connections (the same
// TLS, SASL and session renewal as the fetch client's and the producer's),
// their coordinator found through the seeds and kept by conn.Coordinator,
// which the producer shares. This package holds the
// members' states and transitions; the bytes are package wire's. Member
// speaks FindCoordinator, JoinGroup v7, SyncGroup v5, Heartbeat v3 and
// LeaveGroup v3 through kafka-go's protocol package (kafka-go lays the
// last two answers out in the wrong order, so wire reads them); offsets
// are not its business: the job commits them with the member's current
// generation and member id (Current). ConsumerMember sends
// ConsumerGroupHeartbeat v1 (encoded by wire), and commits for the job
// (OffsetCommit v9, which kafka-go does not speak) with its member epoch.
//
// Why not kafka-go's ConsumerGroup: it is eager, so at every generation
// every member stopped every partition, wrote every open batch (a small
// file each) and started again; and it has no static membership.
//
// Cooperative rebalancing (KIP-429). A member offers two protocols: the
// assignor's name with "-cooperative", then the plain name. The first is
// chosen when every member offers it; a member of kafka-go's days offers
// only the second, and the group runs eager until it leaves. Under the
// cooperative protocol a member keeps what it owns while it rejoins, and
// its subscription names those partitions and their generation (Java's
// ConsumerProtocolSubscription v2). The leader plans with the assignor
// (the rack-aware planner), then withholds every partition the plan moves
// from a member that still owns it; the owner, missing it from its
// assignment, stops it (Handler.Revoke) and rejoins at once, and the
// follow-up rebalance gives it to the planned member. So no partition has
// two readers, and a member that keeps a partition never stops it. A
// member that dies between the two rounds holds its partitions until its
// session times out, then they move.
//
// Static membership (KIP-345). With an instance id, a member that stops
// does not leave (the Java consumer's close does the same), and one that
// joins again with that id within the session timeout gets its old
// assignment back with no rebalance: the coordinator replaces the member
// and answers its SyncGroup from the stored assignment. A second process
// joining with the same id fences the first, which stops with
// ErrFencedInstance. The next-generation coordinator does the opposite: it
// keeps the member that holds the id and refuses the newcomer
// (UNRELEASED_INSTANCE_ID), which stops at once with ErrFencedInstance, as
// the Java consumer does; so does a restart whose predecessor died without
// leaving, until the broker's session timeout drops it.
//
// Errors a member meets: UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION (at join,
// sync or heartbeat) mean the group went on without it: its partitions are
// lost (Handler.Lose: stopped without committing) and it joins as new.
// REBALANCE_IN_PROGRESS rejoins, keeping what it owns when cooperative. A
// coordinator that moved (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
// COORDINATOR_LOAD_IN_PROGRESS) or a broken connection is found again;
// heartbeats go on failing quietly until the session timeout, then the
// partitions count as lost. FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL,
// GROUP_MAX_SIZE_REACHED and a refused session timeout end Run: joining
// again cannot fix them.
//
// A cooperative round that withholds partitions marks every member's
// assignment (followUp), and every member rejoins at once, not only those
// that let go of something: the others would hear of the follow-up round
// only at their next heartbeat.
//
// An empty group's first member on the next-generation protocol holds
// its first assignment (every partition) back for InitialDelay, as the
// classic coordinator delays an empty group's first rebalance, so members
// started together share the partitions from the start
// (initialdelay848.go).
//
// A static member with LeaveOnShutdown leaves at its stop (LeaveGroup by
// member and instance id), for a scale-in; without it, it keeps its place
// for the session timeout, for a restart.
package group
