package pipeline

import (
	"context"
	"time"

	"github.com/logstore/logstore/internal/clock"
	"github.com/logstore/logstore/pipeline/start"
)

// An --until now run ends when the group, not only this member, has read
// every partition to its target. A member whose own partitions are done
// stays in the group while another member holds partitions short of their
// targets: that member may be dead (SIGKILLed, or killed while it joined)
// and keep them until its session ends, and only a member still in the
// group can be given them then. A member that ended at its own share
// (as before) left them unread, exit code 0, nothing said.
//
// A partition is done when this member read it to its target, or when its
// next owner would start at or past its target: the group's committed
// offset, or for a partition never committed where start_offset puts it.

// untilNowPoll is how often a member that waits for the group reads the
// group's offsets.
const untilNowPoll = time.Second

// awaitGroup ends the run once unfinished finds nothing left. It runs once
// per run, from the first time every partition the member owns is done.
func (s *partitionSet) awaitGroup() {
	told := -1
	for {
		left, err := s.unfinished(s.ctx)
		switch {
		case s.ctx.Err() != nil:
			return
		case err != nil:
			s.j.log.Warn("--until now: reading the group's offsets failed; asking again", "err", err)
		case left == 0:
			s.mu.Lock()
			s.finishedAll = true
			s.mu.Unlock()
			s.done()
			return
		case left > 0 && left != told:
			told = left
			s.j.log.Info("--until now: this member's partitions are read; staying in the group until the others are too (a member that died holds its partitions until its session ends)",
				"partitions_left", left)
		}
		if !clock.Sleep(s.ctx, untilNowPoll) {
			return
		}
	}
}

// unfinished counts the run's partitions not yet done; -1 while the member
// still reads one of its own.
func (s *partitionSet) unfinished(ctx context.Context) (int, error) {
	others := map[string][]int{}
	s.mu.Lock()
	for topic, ps := range s.targets {
		for p := range ps {
			tp := topicPartition{topic, p}
			if s.reached[tp] {
				continue
			}
			if _, mine := s.running[tp]; mine {
				s.mu.Unlock()
				return -1, nil
			}
			others[topic] = append(others[topic], p)
		}
	}
	s.mu.Unlock()
	if len(others) == 0 {
		return 0, nil
	}
	positions, _, err := s.j.fetchPositions(ctx, others)
	if err != nil {
		return 0, err
	}
	left := 0
	for topic, ps := range others {
		starts, err := s.j.uncommittedStarts(ctx, topic, ps, positions[topic], s.mode)
		if err != nil {
			return 0, err
		}
		for _, p := range ps {
			fresh, ok := starts[p]
			if !ok {
				fresh = -1 // unknown: taken as not reached
			}
			// The group's view alone: the output's record is its owner's to read.
			at, _ := start.Decide(start.Known{Topic: topic, Partition: p, Group: positions[topic][p], StartOffset: fresh})
			if at.Offset < s.targets[topic][p] {
				left++
			}
		}
	}
	return left, nil
}
