package producer

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"testing"
	"time"

	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/addpartitionstotxn"
	"github.com/segmentio/kafka-go/protocol/txnoffsetcommit"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every code the transaction protocol answers is sorted into what the
// producer must do: a fenced producer stops, a fenced member aborts, a
// moved or busy coordinator is asked again.
func TestTxnErrorCodesAreSorted(t *testing.T) {
	for _, c := range []struct {
		name string
		code int16
		want txnClass
	}{
		{"NONE", 0, txnOK},
		{"NOT_COORDINATOR", 16, txnCoordinatorMoved},
		{"COORDINATOR_NOT_AVAILABLE", 15, txnCoordinatorMoved},
		{"COORDINATOR_LOAD_IN_PROGRESS", 14, txnWait},
		{"CONCURRENT_TRANSACTIONS", 51, txnWait},
		{"REQUEST_TIMED_OUT", 7, txnWait},
		{"UNKNOWN_TOPIC_OR_PARTITION", 3, txnWait},
		{"OPERATION_NOT_ATTEMPTED", 55, txnWait},
		{"PRODUCER_FENCED", 90, txnProducerFenced},
		{"INVALID_PRODUCER_EPOCH", 47, txnProducerFenced},
		{"ILLEGAL_GENERATION", 22, txnGroupFenced},
		{"UNKNOWN_MEMBER_ID", 25, txnGroupFenced},
		{"FENCED_INSTANCE_ID", 82, txnGroupFenced},
		{"REBALANCE_IN_PROGRESS", 27, txnGroupFenced},
		{"TRANSACTIONAL_ID_AUTHORIZATION_FAILED", 53, txnFatal},
		{"INVALID_TXN_STATE", 48, txnFatal},
		{"INVALID_TRANSACTION_TIMEOUT", 50, txnFatal},
		{"GROUP_AUTHORIZATION_FAILED", 30, txnFatal},
	} {
		if got := txnClassOf(c.code); got != c.want {
			t.Errorf("%s (%d): class %d, want %d", c.name, c.code, got, c.want)
		}
	}
}

// AddPartitionsToTxn answers OPERATION_NOT_ATTEMPTED for every partition
// but the one that failed; the failure is what counts.
func TestAddPartitionsAnswerNamesTheRealFailure(t *testing.T) {
	res := &addpartitionstotxn.Response{Results: []addpartitionstotxn.ResponseResult{
		{Name: "a", Results: []addpartitionstotxn.ResponsePartition{{PartitionIndex: 0, ErrorCode: codeOperationNotAttempted}, {PartitionIndex: 1}}},
		{Name: "b", Results: []addpartitionstotxn.ResponsePartition{{PartitionIndex: 0, ErrorCode: codeProducerFenced}}},
	}}
	if got := partitionsCode(res); got != codeProducerFenced {
		t.Fatalf("code %d, want PRODUCER_FENCED", got)
	}
	res.Results[1].Results[0].ErrorCode = 0
	if got := partitionsCode(res); got != codeOperationNotAttempted {
		t.Fatalf("code %d, want OPERATION_NOT_ATTEMPTED", got)
	}
	if got := offsetsCode(&txnoffsetcommit.Response{Topics: []txnoffsetcommit.ResponseTopic{{Partitions: []txnoffsetcommit.ResponsePartition{{}, {ErrorCode: codeIllegalGeneration}}}}}); got != codeIllegalGeneration {
		t.Fatalf("TxnOffsetCommit code %d, want ILLEGAL_GENERATION", got)
	}
}

// A transactional batch carries the transactional attribute, under a
// valid CRC, or read_committed consumers would read it before its
// transaction commits.
func TestTransactionalBatchIsMarked(t *testing.T) {
	for _, txn := range []bool{false, true} {
		var buf bytes.Buffer
		if err := encodeBatch(&buf, []Record{{Value: []byte("v")}}, compress.Lz4, txn, time.Now()); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		stamp(b, 9, 2, 0)
		h := b[4:]
		if crc32.Checksum(h[batchAttrsAt:], castagnoli) != uint32(h[batchCRCAt])<<24|uint32(h[batchCRCAt+1])<<16|uint32(h[batchCRCAt+2])<<8|uint32(h[batchCRCAt+3]) {
			t.Fatal("CRC does not cover the attributes")
		}
		var rs protocol.RecordSet
		if _, err := rs.ReadFrom(bufio.NewReader(bytes.NewReader(b))); err != nil {
			t.Fatal(err)
		}
		if got := rs.Attributes.Transactional(); got != txn {
			t.Errorf("transactional %v, want %v", got, txn)
		}
		if got := rs.Attributes.Compression(); got != compress.Lz4 {
			t.Errorf("compression %v, want lz4", got)
		}
	}
}

// The OffsetFetch with require_stable is what a broker reads as such, and
// its answer's UNSTABLE_OFFSET_COMMIT (a transaction still open) is not
// taken for offsets.
func TestStableOffsetsRequestAndAnswer(t *testing.T) {
	req := stableOffsetsRequest("g", map[string][]int32{"t": {0, 2}})
	wire := req.AppendTo(nil)
	back := kmsg.NewPtrOffsetFetchRequest()
	back.Version = stableOffsetsVersion
	if err := back.ReadFrom(wire); err != nil {
		t.Fatal(err)
	}
	if !back.RequireStable || back.Group != "g" || len(back.Topics) != 1 || back.Topics[0].Topic != "t" || len(back.Topics[0].Partitions) != 2 {
		t.Fatalf("request read back as %+v", back)
	}

	res := kmsg.NewPtrOffsetFetchResponse()
	res.Version = stableOffsetsVersion
	rt := kmsg.NewOffsetFetchResponseTopic()
	rt.Topic = "t"
	meta := "cut:41"
	p0 := kmsg.NewOffsetFetchResponseTopicPartition()
	p0.Partition, p0.Offset, p0.Metadata = 0, 30, &meta
	p2 := kmsg.NewOffsetFetchResponseTopicPartition()
	p2.Partition, p2.Offset = 2, -1
	rt.Partitions = []kmsg.OffsetFetchResponseTopicPartition{p0, p2}
	res.Topics = []kmsg.OffsetFetchResponseTopic{rt}
	got := kmsg.NewPtrOffsetFetchResponse()
	got.Version = stableOffsetsVersion
	if err := got.ReadFrom(res.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	offsets, code := stableOffsets(got)
	if code != 0 || offsets["t"][0] != (Committed{30, "cut:41"}) || offsets["t"][2] != (Committed{-1, ""}) {
		t.Fatalf("offsets %v, code %d", offsets, code)
	}
	got.Topics[0].Partitions[1].ErrorCode = codeUnstableOffsetCommit
	if offsets, code := stableOffsets(got); code != codeUnstableOffsetCommit || offsets != nil {
		t.Fatalf("an unstable partition read as offsets %v, code %d", offsets, code)
	}
}

// A transactional producer writes nothing outside a transaction, and
// says so before it dials anything.
func TestTransactionalProduceNeedsATransaction(t *testing.T) {
	p, err := New(Config{Brokers: []string{"127.0.0.1:1"}, TransactionalID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := p.Produce(ctx, "topic", []Record{{Value: []byte("v")}}); !errors.Is(err, ErrNoTxn) {
		t.Fatalf("Produce outside a transaction: %v, want ErrNoTxn", err)
	}
	if err := p.CommitTxn(ctx); !errors.Is(err, ErrNoTxn) {
		t.Fatalf("CommitTxn outside a transaction: %v, want ErrNoTxn", err)
	}
	if err := p.AbortTxn(ctx); err != nil {
		t.Fatalf("AbortTxn outside a transaction: %v, want nothing to do", err)
	}
	plain, err := New(Config{Brokers: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.BeginTxn(ctx); !errors.Is(err, errNotTransactional) {
		t.Fatalf("BeginTxn without a transactional id: %v", err)
	}
}
