package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// The consumer protocol's member metadata and assignment, laid out as the
// Java client's ConsumerProtocolSubscription and ConsumerProtocolAssignment
// (big-endian, int16-length strings, int32 counts; not flexible).
//
// Eager protocols are sent as version 1 with topics and user data only:
// kafka-go's ConsumerGroup reads exactly that and refuses any byte more, so
// a member of ours and one of the kafka-go days can form a group while a
// Deployment rolls from one to the other. Cooperative protocols are sent
// as version 2: the owned partitions and the generation they were owned in
// follow, as in Java's subscription v2, so the leader can tell a current
// owner from a stale one.
const (
	EagerVersion       = 1
	CooperativeVersion = 2
)

// Subscription is one member's JoinGroup metadata.
type Subscription struct {
	Version    int16
	Topics     []string
	UserData   []byte
	Owned      Partitions // version 2
	Generation int32      // version 2: the generation Owned is from; -1 none
}

func (s Subscription) Encode() []byte {
	var b []byte
	b = binary.BigEndian.AppendUint16(b, uint16(s.Version))
	b = appendStrings(b, s.Topics)
	b = appendBytes(b, s.UserData)
	if s.Version >= CooperativeVersion {
		b = appendAssignment(b, s.Owned)
		b = binary.BigEndian.AppendUint32(b, uint32(s.Generation))
	}
	return b
}

func DecodeSubscription(data []byte) (Subscription, error) {
	r := reader{buf: data}
	s := Subscription{Version: r.int16(), Generation: -1}
	s.Topics = r.strings()
	s.UserData = r.bytes()
	if s.Version >= CooperativeVersion {
		s.Owned = r.assignment()
		s.Generation = r.int32()
	}
	return s, r.err
}

// followUp is the assignment's user data when the leader withheld moving
// partitions for a follow-up round (KIP-429): every member rejoins at
// once, rather than the members that let go of nothing waiting for their
// next heartbeat to hear of the round (a heartbeat interval, 3 s by
// default, between a join and the partitions reaching the newcomer).
var followUp = []byte("logstore:follow-up")

// EncodeAssignment is the SyncGroup assignment of one member: version 1,
// its partitions, and as user data followUp or nothing.
func EncodeAssignment(a Partitions, rejoin bool) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint16(b, EagerVersion)
	b = appendAssignment(b, a)
	if rejoin {
		return appendBytes(b, followUp)
	}
	return appendBytes(b, nil)
}

// DecodeAssignment reads a member's assignment and whether the leader
// asked for a follow-up round.
func DecodeAssignment(data []byte) (a Partitions, rejoin bool, err error) {
	if len(data) == 0 {
		return Partitions{}, false, nil // a member given nothing
	}
	r := reader{buf: data}
	r.int16()
	a = r.assignment()
	if len(r.buf) > 0 {
		rejoin = bytes.Equal(r.bytes(), followUp)
	}
	return a, rejoin, r.err
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func appendStrings(b []byte, ss []string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(ss)))
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

func appendBytes(b, data []byte) []byte {
	if data == nil {
		return binary.BigEndian.AppendUint32(b, ^uint32(0)) // null
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	return append(b, data...)
}

// appendAssignment writes topics in name order, partitions ascending, so
// the same assignment always encodes the same.
func appendAssignment(b []byte, a Partitions) []byte {
	topics := slices.Sorted(maps.Keys(a))
	b = binary.BigEndian.AppendUint32(b, uint32(len(topics)))
	for _, t := range topics {
		b = appendString(b, t)
		ps := slices.Sorted(slices.Values(a[t]))
		b = binary.BigEndian.AppendUint32(b, uint32(len(ps)))
		for _, p := range ps {
			b = binary.BigEndian.AppendUint32(b, uint32(p))
		}
	}
	return b
}

// Partitions names partitions by topic, as the classic protocol's
// assignment does (the member's Assignment is one).
type Partitions = map[string][]int

var ErrMalformed = errors.New("malformed consumer protocol data")

// reader consumes buf and keeps the first error; reads after it return
// zero values.
type reader struct {
	buf []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.buf) {
		r.err = fmt.Errorf("%w: %d bytes wanted, %d left", ErrMalformed, n, len(r.buf))
		r.buf = nil
		return nil
	}
	out := r.buf[:n]
	r.buf = r.buf[n:]
	return out
}

func (r *reader) int16() int16 {
	b := r.take(2)
	if b == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}

func (r *reader) int32() int32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

// count reads an array length that must fit in what is left (each item is
// at least min bytes), so a forged count cannot make it allocate without
// bound. A null array (-1) is empty.
func (r *reader) count(min int) int {
	n := int(r.int32())
	if n < 0 {
		return 0
	}
	if n*min > len(r.buf) {
		r.take(n * min) // records the error
		return 0
	}
	return n
}

func (r *reader) string() string { return string(r.take(int(r.int16()))) }

func (r *reader) strings() []string {
	n := r.count(2)
	out := make([]string, 0, n)
	for range n {
		out = append(out, r.string())
	}
	return out
}

func (r *reader) bytes() []byte {
	n := r.int32()
	if n < 0 {
		return nil
	}
	return r.take(int(n))
}

func (r *reader) assignment() Partitions {
	n := r.count(6)
	a := make(Partitions, n)
	for range n {
		t := r.string()
		k := r.count(4)
		ps := make([]int, 0, k)
		for range k {
			ps = append(ps, int(r.int32()))
		}
		slices.Sort(ps)
		a[t] = append(a[t], ps...)
	}
	return a
}

// ErrorCode reads the error code of a Heartbeat or LeaveGroup answer
// (v1-v3: throttle_time_ms int32, then error_code int16); a short body
// reads as UNKNOWN_SERVER_ERROR.
func ErrorCode(body []byte) int16 {
	if len(body) < 6 {
		return -1
	}
	return int16(binary.BigEndian.Uint16(body[4:6]))
}

// LeftMemberCode reads the first member's error code of a LeaveGroup v3
// answer (after the top-level error: members, each a member id, a
// nullable instance id and an error code): a static member named with an
// instance id the group does not hold, or with another member id, is
// refused there (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID).
func LeftMemberCode(body []byte) int16 {
	r := reader{buf: body}
	r.take(6) // throttle time, error code
	if n := r.count(6); n < 1 {
		if r.err != nil {
			return -1
		}
		return 0 // none named: nothing refused
	}
	r.string()
	if n := r.int16(); n > 0 {
		r.take(int(n))
	}
	code := r.int16()
	if r.err != nil {
		return -1
	}
	return code
}
