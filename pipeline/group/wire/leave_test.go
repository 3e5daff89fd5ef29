package wire

import (
	"encoding/binary"
	"testing"
)

// TestLeftMemberCodeReadsTheMembersRefusal: a LeaveGroup v3 answer can be
// fine at the top and refuse the member named in it (a static member
// whose instance id the group does not hold, or holds under another member
// id); that refusal must not read as a leave.
func TestLeftMemberCodeReadsTheMembersRefusal(t *testing.T) {
	answer := func(members int, instance string, code int16) []byte {
		b := make([]byte, 6) // throttle time 0, error 0
		b = binary.BigEndian.AppendUint32(b, uint32(members))
		for range members {
			b = appendString(b, "logstore-2-6c4f")
			if instance == "" {
				b = binary.BigEndian.AppendUint16(b, 0xffff) // null
			} else {
				b = appendString(b, instance)
			}
			b = binary.BigEndian.AppendUint16(b, uint16(code))
		}
		return b
	}
	for _, tt := range []struct {
		name string
		body []byte
		want int16
	}{
		{"left", answer(1, "logstore-2", 0), 0},
		{"dynamic, left", answer(1, "", 0), 0},
		{"fenced instance", answer(1, "logstore-2", 82), 82},
		{"unknown member", answer(1, "logstore-2", 25), 25},
		{"nobody named", answer(0, "", 0), 0},
		{"cut short", answer(1, "logstore-2", 82)[:12], -1},
	} {
		if got := LeftMemberCode(tt.body); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}
