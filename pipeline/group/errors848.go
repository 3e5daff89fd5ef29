package group

import (
	"fmt"

	"github.com/segmentio/kafka-go"
)

// codeError is a broker error code of the next-generation protocol, which
// kafka-go has no name for (it prints "[113] : ").
type codeError struct {
	code int16
	name string
}

func (e codeError) Error() string { return fmt.Sprintf("[%d] %s", e.code, e.name) }

// Errors of the next-generation protocol (KIP-848).
var (
	// ErrFencedMemberEpoch: the coordinator moved on without this member
	// (its session ended); its partitions are someone else's.
	ErrFencedMemberEpoch = codeError{110, "FENCED_MEMBER_EPOCH"}
	// ErrStaleMemberEpoch: a commit carried an epoch the member has since
	// left behind; sent again with the current epoch it goes through.
	ErrStaleMemberEpoch      = codeError{113, "STALE_MEMBER_EPOCH"}
	errUnreleasedInstanceID  = codeError{111, "UNRELEASED_INSTANCE_ID"}
	errUnsupportedAssignor   = codeError{112, "UNSUPPORTED_ASSIGNOR"}
	errGroupIDNotFound       = codeError{69, "GROUP_ID_NOT_FOUND"}
	errTopicAuthorization    = codeError{29, "TOPIC_AUTHORIZATION_FAILED"}
	errUnsupportedVersion    = codeError{35, "UNSUPPORTED_VERSION"}
	errInvalidRequest        = codeError{42, "INVALID_REQUEST"}
	errUnknownServerErrorish = codeError{-1, "UNKNOWN_SERVER_ERROR"}
)

// brokerError is the error a code stands for, with the broker's message
// when it sent one; nil for 0.
func brokerError(code int16, message string) error {
	if code == 0 {
		return nil
	}
	var err error = kafka.Error(code)
	for _, e := range []codeError{ErrFencedMemberEpoch, ErrStaleMemberEpoch, errUnreleasedInstanceID, errUnsupportedAssignor,
		errGroupIDNotFound, errTopicAuthorization, errUnsupportedVersion, errInvalidRequest, errUnknownServerErrorish} {
		if e.code == code {
			err = e
		}
	}
	if message != "" {
		return fmt.Errorf("%w (%s)", err, message)
	}
	return err
}
