package pipeline

import (
	"strings"
	"testing"
)

// A static member's transactional id is the same across its restarts, so
// the restarted pod fences its predecessor and aborts what it left open;
// dynamic members, which share no name across restarts, must never share
// one (each would fence the other, over and over).
func TestTransactionalIDPerMember(t *testing.T) {
	if a, b := transactionalID("g", "pod-0"), transactionalID("g", "pod-0"); a != b || a != "logstore-g-pod-0" {
		t.Errorf("static member: %q then %q, want logstore-g-pod-0 both times", a, b)
	}
	if transactionalID("g", "pod-0") == transactionalID("g", "pod-1") {
		t.Error("two static members share a transactional id")
	}
	a, b := transactionalID("g", ""), transactionalID("g", "")
	if a == b || !strings.HasPrefix(a, "logstore-g-") {
		t.Errorf("dynamic members: %q and %q, want two ids under logstore-g-", a, b)
	}
}
