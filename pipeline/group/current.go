package group

import "sync"

// current is the generation (classic) or member epoch (consumer) and the
// member id a member commits with, and a way to wait for the next one.
type current struct {
	mu       sync.Mutex
	gen      int32 // -1 outside a generation
	memberID string
	changed  chan struct{} // closed when gen or memberID change
}

func newCurrent(memberID string) current {
	return current{gen: -1, memberID: memberID, changed: make(chan struct{})}
}

// Current is the generation (or member epoch) and member id to commit
// offsets with.
func (c *current) Current() (generation int32, memberID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen, c.memberID
}

// Changed is closed once the generation or member id differs from what
// Current answered before it was called.
func (c *current) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

func (c *current) set(gen int32, memberID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen == c.gen && memberID == c.memberID {
		return
	}
	c.gen, c.memberID = gen, memberID
	close(c.changed)
	c.changed = make(chan struct{})
}
