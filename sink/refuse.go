package sink

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// RowChecker is a sink that can name, before it writes anything, the rows
// it will refuse however often it is asked: a JSON row over the Kafka
// output's batch_bytes, a row whose partition folder makes a key too long
// for the store. The pipeline moves those rows to the dead letters first,
// so no sink ever holds a file or a record of a row another sink refused,
// and a re-cut of the same batch refuses the same rows.
type RowChecker interface {
	CheckRows(b *Batch) []*RowError
}

// RowErrors is every row of a batch a sink refused, in batch order.
type RowErrors []*RowError

func (e RowErrors) Error() string {
	if len(e) == 1 {
		return e[0].Error()
	}
	return fmt.Sprintf("%d rows refused, first: %v", len(e), e[0])
}

// Unwrap lets errors.As find the first *RowError.
func (e RowErrors) Unwrap() []error {
	out := make([]error, len(e))
	for i, r := range e {
		out[i] = r
	}
	return out
}

// AsRowErrors returns the refused rows err names (a *RowError or RowErrors
// anywhere in its chain), or nil when err is not about rows: an error that
// retrying may fix.
func AsRowErrors(err error) []*RowError {
	var many RowErrors
	if errors.As(err, &many) {
		return many
	}
	var one *RowError
	if errors.As(err, &one) {
		return []*RowError{one}
	}
	return nil
}

// keyChecker is a store with a limit on key length.
type keyChecker interface {
	CheckKey(key string) error
}

// longestPart is the part number a key is checked with: the longest name
// a folder's file can get, so a key that passes never fails at part 10.
const longestPart = 99999

// CheckRows refuses the rows whose folder makes a file key the store
// cannot hold (an S3 key over 1,024 bytes, a path element over 255). The
// check is on the folder's longest possible name (the largest last offset
// and part number), so it is the same for a row whatever max_file_bytes
// splits and wherever the batch is cut.
func (f *Files) CheckRows(b *Batch) []*RowError {
	kc, ok := f.store.(keyChecker)
	if !ok || len(b.Rows) == 0 {
		return nil
	}
	layout, err := f.newLayout(b.Schema)
	if err != nil {
		return nil // Write reports it; it is no row's fault
	}
	// The longest name the batch can get, too: rows are checked as they are
	// staged, before the cut says where the batch ends.
	longest := *b
	longest.Last = math.MaxInt64
	// Rows mostly share their neighbour's folder: a folder is checked
	// once, and only a new folder is a new string.
	var out []*RowError
	checked := map[string]error{}
	var name []byte
	var folder string
	for i, r := range b.Rows {
		same := i > 0 && layout.SameFolder(b.Rows[i-1], r)
		if !same {
			name = layout.AppendFolder(name[:0], r)
			same = i > 0 && string(name) == folder
		}
		if !same { // else the previous row's folder, and its err
			folder = string(name)
			var ok bool
			if err, ok = checked[folder]; !ok {
				err = kc.CheckKey(objectKey(f.prefix, folder, &longest, longestPart))
				checked[folder] = err
			}
		}
		if err != nil {
			out = append(out, &RowError{Topic: b.Topic, Partition: b.Partition, Index: i, Offset: sourceOffset(b, i), Err: err})
		}
	}
	return out
}

// CheckRows refuses the rows whose record would be over batch_bytes or
// the output topic's max.message.bytes (recordLimit). It
// counts the bytes KafkaMessages would make (recordSize) without making the
// records, and encodes a row to JSON only when a bound on its size does not
// already show that it fits.
func (k *Kafka) CheckRows(b *Batch) []*RowError {
	cfg := k.cfg
	keyCol := -1
	if cfg.Key != "" {
		keyCol = b.Schema.Index(cfg.Key)
	}
	original := cfg.Value == "original"
	if original && len(b.Sources) < len(b.Rows) {
		return nil // Write reports it; it is no row's fault
	}
	limit, what := k.recordLimit()
	headers := len(HeaderSourceTopic) + len(b.Topic) + len(HeaderSourcePartition) + len(strconv.Itoa(b.Partition)) + len(HeaderSourceOffset)
	var out []*RowError
	var buf []byte
	for i, r := range b.Rows {
		n := headers + len(strconv.FormatInt(sourceOffset(b, i), 10))
		if keyCol >= 0 {
			n += len(keyBytes(r[keyCol]))
		}
		switch {
		case original:
			n += len(b.Sources[i].Value)
		case int64(n+rowJSONBound(b.Schema, r)) <= limit:
			continue // fits however it encodes: no need to encode it twice
		default:
			var err error
			if buf, err = appendRowJSON(buf[:0], b.Schema, r); err != nil {
				out = append(out, &RowError{Topic: b.Topic, Partition: b.Partition, Index: i, Offset: sourceOffset(b, i), Err: err})
				continue
			}
			n += len(buf)
		}
		if int64(n) > limit {
			out = append(out, &RowError{Topic: b.Topic, Partition: b.Partition, Index: i, Offset: sourceOffset(b, i),
				Err: fmt.Errorf("kafka: a record of %d bytes is over %s (%d)", n, what, limit)})
		}
	}
	return out
}

// maxS3KeyBytes is S3's limit on an object key (UTF-8 bytes).
const maxS3KeyBytes = 1024

// CheckKey refuses keys over S3's 1,024 bytes, and keys with a path
// element over 255 bytes: AWS takes those, but the S3-compatible stores
// that keep objects as files (MinIO, versitygw, Ceph's posix backends)
// answer 400 KeyTooLongError. One rule for every store keeps a row's fate
// the same wherever the output goes, and no partition value that long is
// a partition anyone queries.
func (s *S3Store) CheckKey(key string) error {
	if len(key) > maxS3KeyBytes {
		return fmt.Errorf("the S3 key %.80q… is %d bytes, over S3's limit of %d: a partition_by value is too long", key, len(key), maxS3KeyBytes)
	}
	return checkNameBytes(key, "S3-compatible stores on a file system allow")
}

// maxNameBytes is what most file systems allow for one path element
// (NAME_MAX on ext4, xfs, APFS).
const maxNameBytes = 255

// CheckKey refuses keys with a path element over 255 bytes.
func (s *FileStore) CheckKey(key string) error {
	return checkNameBytes(key, "a file system allows")
}

func checkNameBytes(key, who string) error {
	for _, el := range strings.Split(key, "/") {
		if len(el) > maxNameBytes {
			return fmt.Errorf("the path element %.80q… is %d bytes, over the %d %s: a partition_by value is too long", el, len(el), maxNameBytes, who)
		}
	}
	return nil
}

var (
	_ RowChecker = (*Files)(nil)
	_ RowChecker = (*Kafka)(nil)
)

// rowJSONBound is at least len(appendRowJSON(nil, s, r)), found without
// encoding: a string byte becomes at most 6 ("\u001f", "\ufffd").
func rowJSONBound(s *Schema, r Row) int {
	n := 2
	for i, f := range s.Fields {
		n += 6*len(f.Name) + 4 // quotes, colon, comma
		if i >= len(r) {
			continue
		}
		switch x := r[i].(type) {
		case string:
			n += 6*len(x) + 2
		case []byte:
			n += (len(x)+2)/3*4 + 2
		case map[string]string:
			n += 2
			for k, v := range x {
				n += 6*(len(k)+len(v)) + 6
			}
		default:
			n += 48 // null, numbers, bools, times
		}
	}
	return n
}

// RowJSON is r as the Kafka sink writes it with value: json, for the dead
// letter of a row a sink refused; a row that does not encode gives what
// encoded before the fault.
func RowJSON(s *Schema, r Row) []byte {
	b, _ := appendRowJSON(nil, s, r)
	return b
}
