package producer

import (
	"errors"
)

// ErrProducerFenced says another producer took this transactional id (it
// called InitProducerId after this one; PRODUCER_FENCED,
// INVALID_PRODUCER_EPOCH): this producer is a zombie and can write nothing
// more. Its open transaction is aborted by the coordinator.
var ErrProducerFenced = errors.New("producer fenced: another producer took over its transactional id")

// ErrGroupFenced says the group moved on without the member whose
// generation a TxnOffsetCommit carried (ILLEGAL_GENERATION,
// UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS; KIP-447):
// the offsets are someone else's to commit. The transaction must be
// aborted; the producer stays usable.
var ErrGroupFenced = errors.New("fenced by the group: the member's generation is over")

// ErrAbortTxn is the error of a transaction that can only be aborted: a
// record of it failed, so committing would commit a part.
var ErrAbortTxn = errors.New("the transaction can only be aborted")

// txnClass is what a transactional request's error code asks of the
// producer.
type txnClass int

const (
	txnOK               txnClass = iota
	txnCoordinatorMoved          // find the coordinator again and resend
	txnWait                      // resend after a short wait
	txnProducerFenced            // stop: a newer producer has the id
	txnGroupFenced               // abort: the generation is over
	txnFatal                     // abort and report (authorization, config)
)

// Kafka error codes of the transaction protocol (KIP-98, KIP-447, KIP-588).
const (
	codeUnknownTopicOrPartition   = 3
	codeNetworkException          = 13
	codeCoordinatorLoadInProgress = 14
	codeCoordinatorNotAvailable   = 15
	codeNotCoordinator            = 16
	codeIllegalGeneration         = 22
	codeUnknownMemberID           = 25
	codeRebalanceInProgress       = 27
	codeConcurrentTransactions    = 51
	codeOperationNotAttempted     = 55
	codeFencedInstanceID          = 82
	codeUnstableOffsetCommit      = 88
)

func txnClassOf(code int16) txnClass {
	switch code {
	case codeNone:
		return txnOK
	case codeNotCoordinator, codeCoordinatorNotAvailable:
		return txnCoordinatorMoved
	case codeCoordinatorLoadInProgress, codeConcurrentTransactions, codeRequestTimedOut, codeNetworkException,
		// A partition the brokers learn of a moment later (a topic just
		// made), and the siblings of a failed one in AddPartitionsToTxn.
		codeUnknownTopicOrPartition, codeOperationNotAttempted:
		return txnWait
	case codeProducerFenced, codeInvalidProducerEpoch:
		return txnProducerFenced
	case codeIllegalGeneration, codeUnknownMemberID, codeFencedInstanceID, codeRebalanceInProgress:
		return txnGroupFenced
	}
	return txnFatal
}

// ErrTxnOutcomeUnknown is a commit whose EndTxn went out and whose answer
// never came (a lost connection, the caller's context ended): the
// coordinator may have committed the transaction. The caller must not
// write its contents again in a new transaction before it learns the
// outcome: from AbortTxn (ErrTxnCommitted, or nil for a true abort), or
// from the offsets the transaction committed (StableOffsets).
var ErrTxnOutcomeUnknown = errors.New("the transaction's commit was sent and its answer lost: it may have committed")

// ErrTxnCommitted is AbortTxn's answer for a transaction whose commit the
// coordinator had already taken (INVALID_TXN_STATE to the abort after a
// commit whose answer was lost): nothing was aborted, everything in it is
// visible.
var ErrTxnCommitted = errors.New("the transaction was committed, not aborted")
