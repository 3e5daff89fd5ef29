package sink

import "fmt"

// RestageError says a Stager lost what it had staged of a partition's open
// batch: its spool folder could not be written (a full disk, an I/O
// error), and the half-written files, which no retry could finish, are
// gone. Calling Stage or Write again cannot bring back the rows earlier
// calls took, and the caller no longer has them; it reads the batch's
// records again from First and stages them anew, once the disk may have
// room. The same records make the same files, so nothing is lost or
// written twice. It is transient: the partition holds and backs off; no row
// is refused for it.
type RestageError struct {
	Topic     string
	Partition int
	First     int64 // the open batch's first offset
	Err       error
}

func (e *RestageError) Error() string {
	return fmt.Sprintf("%s[%d]: the batch from offset %d was lost from the spool and must be read again: %v", e.Topic, e.Partition, e.First, e.Err)
}

func (e *RestageError) Unwrap() error { return e.Err }
