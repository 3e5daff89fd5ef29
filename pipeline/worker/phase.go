package worker

// phase is where a batch is in its life, in the order it passes them; a
// batch never goes back but from unsure to delivered (its transaction
// did not commit) and, read again (restaging), to open. Within a phase
// the batch's counters say how far the step went (stagedBy, wroteBy,
// deadBy: the sinks and dead-letter writers that have it).
type phase uint8

const (
	// phaseOpen: records are taken (and staged into the sinks); the
	// batch is not cut, or is cut and being delivered.
	phaseOpen phase = iota
	// phaseFilesOnly: the table, the last output, has the batch's data
	// files and not yet its snapshot (deliver's split where the
	// partition reads on), since openBatch.snapshotFrom; commitAhead
	// commits the snapshot (then wroteBy passes the table) and writes
	// the files' record, and only then is the batch delivered.
	phaseFilesOnly
	// phaseDelivered: every sink holds the batch cut at last; only the
	// commit of next is left (with exactly_once: its transaction, then
	// the table's snapshot and the resume record).
	phaseDelivered
	// phaseUnsure: exactly_once: a transaction of it went unanswered or
	// its partition stopped under it, and may have committed. The cycle
	// that holds it (openBatch.txn) or else the group's offset tells
	// before it is written again.
	phaseUnsure
	// phaseTransacted: exactly_once: its transaction (rows, dead
	// letters, next) committed; the table's snapshot after it is left.
	phaseTransacted
	// phaseTabled: exactly_once: the table's snapshot after the
	// transaction holds it too; the resume record is left.
	phaseTabled
)

var phaseNames = [...]string{"open", "files-only", "delivered", "unsure", "transacted", "tabled"}

func (p phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return "phase?"
}

// delivered says every sink holds the batch: it is cut for good, at last.
func (b *openBatch) delivered() bool { return b.phase >= phaseDelivered }

// reach moves the batch on to p, never back.
func (b *openBatch) reach(p phase) { b.phase = max(b.phase, p) }
