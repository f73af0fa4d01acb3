// Package ledger records, on disk in Pebble, everything ackcheck learns about
// each message: that it was sent (and when it was meant to be), its outcome
// (acked at a position, rejected, unknown), and every time it was read.
//
// # Layout
//
// Events are kept per kind (Kind) and producer. Recording appends a small
// fixed-size struct to an in-memory shard; a background flusher sorts each
// shard by sequence number and writes it as one or more fragments, each a
// varint-packed run of up to fragmentMax events under the key
//
//	kind(1) producer(4) firstSeq(8) fragment number(4)
//
// Fragments of one flush are written in a single Pebble batch, together with
// the flush's metadata. Because keys sort by (producer, firstSeq), a scan can
// merge fragments into one stream sorted by (producer, seq) while holding
// only the few fragments whose sequence ranges overlap (see Cursor). This is
// what makes recording cheap (about 12 bytes and one slice append per event,
// one Pebble key per few thousand events) and verification a merge of sorted
// scans rather than a point lookup per message.
//
// # What a crash of ackcheck can lose
//
// A call to Record returns once the event is in memory. Events reach Pebble
// at the next flush, at most Options.FlushInterval later (or sooner, when a
// shard holds Options.FlushEvents events). Each flush is one atomic batch,
// committed with Sync unless Options.NoSync is set. Therefore:
//
//   - SIGKILL of ackcheck loses exactly the events recorded since the start of
//     the last committed flush: a window of at most FlushInterval plus the
//     time one commit takes (tens of milliseconds). A power loss of the load
//     machine loses the same window (with NoSync: everything since the last
//     WAL fsync).
//   - A flush is all or nothing, and a message's send is always recorded
//     before its outcome (the load records the send, then publishes), and a
//     flush takes a shard's sends after its other kinds (flushOrder). So a
//     recorded outcome always has a recorded send, and a recorded ack is
//     never half-written.
//
// Why the verdict stays sound after such a crash: "lost" is reported only for
// an ack the ledger holds, so an ack lost from the ledger can never be
// reported lost; at worst the message is then counted as read but not acked
// (indeterminate) or not written. The price is that a message acked in the
// last window before ackcheck itself died is not checked. A send lost from the
// ledger could make its message look like a phantom when read back; the
// verifier uses Meta.Clean and SentThrough to count such reads as
// "unrecorded" instead (sequence numbers are assigned in order per producer,
// so any sequence at or below the highest committed send of its producer was
// really recorded, and a read of one that is missing is a genuine phantom).
//
// # Damage is not a crash
//
// Pebble replays its write-ahead log up to the first record it cannot read
// and takes the rest for the torn tail of a crash; a log emptied or deleted
// before the last one it does not notice at all. Either would silently
// become a shorter ledger, and a shorter ledger a wrong verdict: missing
// sends read back as phantoms blamed on the broker, missing acks are never
// checked. Two witnesses stop that:
//
//   - each committed flush (and each PutMeta) appends a synced, checksummed
//     entry to the COMMITTED file (commits.go), which vouches for the tail;
//   - each commit also writes a numbered flush record in the same batch
//     (whole.go), which makes a hole anywhere before the tail visible.
//
// OpenReadOnly, which verify and report use, proves the ledger whole
// against both before a verdict reads it, or refuses it with ErrDamaged
// naming what is missing and the files as they are; it changes no byte
// of the directory. Open (for writing) checks the commit record as before.
// The cost: one more fsync per flush, and at verify one pass over the
// ledger's keys.
package ledger

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Kind is the kind of an event; each kind is its own sorted stream.
type Kind byte

const (
	// Send: the message was handed to the driver. Time is the intended send
	// time (Unix ns) from the load schedule.
	Send Kind = 'S'
	// Outcome: the driver's answer. Status is one of the Outcome* values;
	// Partition and Offset are the acked position (-1 when unknown); Time is
	// the publish latency in ns, measured from the intended send time.
	Outcome Kind = 'O'
	// Read: a copy of the message found by the read-back. Status is a
	// message.Status; Time is the intended send time the copy carries
	// (Unix ns): for a copy whose send the ledger lacks, what the crash
	// window is held to (a corrupt copy's may be anything).
	Read Kind = 'R'
	// LiveRead: a copy read by the consumer that runs during the load. Time
	// is the end-to-end latency in ns (read time minus intended send time).
	LiveRead Kind = 'L'
	// Delivery: a copy given to a member of the run's consumer group
	// (drivers.GroupMember.Poll), recorded before the commit that covers
	// it is sent. Partition and Offset are where it was delivered from;
	// Time is when the poll returned (Unix ns); Status is the member's
	// number in the run.
	Delivery Kind = 'D'
	// Commit: a commit of the run's consumer group that the broker
	// acknowledged, for one partition. It is no message's event:
	// Producer is CommitProducer and Seq numbers the run's commits in
	// the order their answers came. Partition is the partition; Offset is
	// the offset committed (every record below it processed); Time is
	// when the broker's answer came (Unix ns); Status is the member's
	// number. A commit the broker refused is not recorded: it promises
	// nothing.
	Commit Kind = 'C'
)

// CommitProducer is the producer number Commit events are recorded
// under: no load producer has it (producer numbers are counted from 0
// by the load and its shards).
const CommitProducer uint32 = math.MaxUint32

// Outcome statuses, as recorded in Event.Status for Kind Outcome.
const (
	OutcomeAcked    uint8 = 1
	OutcomeRejected uint8 = 2
	OutcomeUnknown  uint8 = 3
)

var kinds = []Kind{Send, Outcome, Read, LiveRead, Delivery, Commit}

// Event is one recorded fact about the message (Producer, Seq). Its fields
// mean what its Kind says. They are ordered so that an Event takes 40 bytes,
// not 48: the ledger holds every event of a flush interval in memory.
type Event struct {
	Seq       uint64
	Offset    int64
	Time      int64
	Producer  uint32
	Partition int32
	Status    uint8
}

// Options tunes the ledger. The zero value is valid: see each field's
// default.
type Options struct {
	// FlushInterval is the longest an event waits in memory. Default 50ms.
	// It bounds what a crash of ackcheck can lose (see the package doc).
	FlushInterval time.Duration
	// FlushEvents flushes early when any shard holds this many events.
	// Default 65536.
	FlushEvents int
	// NoSync commits flushes without fsync: a crash of ackcheck still loses
	// nothing committed, a power loss of the load machine may. Default false
	// (an fsync per flush costs about 0.4 ms on this project's machines).
	NoSync bool
	// FS replaces the filesystem, for crash tests. Default: the OS.
	FS vfs.FS
	// ExpectedMessages is how many messages the ledger will hold, about
	// (a hint; 0: not known). It sizes the memtable to the run, and with
	// it the disk a run takes: Pebble preallocates each WAL file at 110%
	// of the memtable size, and a ledger keeps two (the live one and one
	// kept for reuse). Unsized, that is 2 x 35 MB for any run, 70 MB
	// for a run of a few thousand messages. Sized, the memtable is
	// walBytesPerMessage per message, at least minMemTable and at most
	// the 32 MiB of an unsized ledger: a run past about half a million
	// messages is tuned as before, a smaller one never outgrows its
	// memtable (a message's events take about 36 bytes of WAL), so it
	// writes no more tables than before.
	ExpectedMessages int64

	// memTableSize replaces the 32 MiB memtable (writeOnce), for tests that
	// need many tables from few events; memTablesQueued replaces how
	// many full memtables may wait for their flush before writes stall.
	memTableSize    uint64
	memTablesQueued int
}

func (o *Options) ensureDefaults() {
	if o.FlushInterval <= 0 {
		o.FlushInterval = 50 * time.Millisecond
	}
	if o.FlushEvents <= 0 {
		o.FlushEvents = 1 << 16
	}
}

// fragmentMax caps events per fragment, bounding what a reader holds open.
const fragmentMax = 4096

// writeOnce tunes Pebble for what a ledger is: keys written once, never
// overwritten, and read back by one full scan per kind.
//
// Pebble's defaults compact level 0 into the next level once it holds 4
// overlapping tables. A ledger's tables always overlap (every flush writes
// into every producer's key range), so a compaction of level 0 rewrote with
// them the tables below whose key ranges they span, much of the ledger
// written so far, decompressing and compressing it again: in a profile of
// bench --peer's unpaced produce of 3 million messages, half the ledger's
// CPU, and more the longer the run. Here level 0 grows to ledgerL0Tables
// tables before Pebble compacts it, writes never stall on it, and the
// memtable is 32 MiB rather than 4, so that a table holds about 2.7
// million messages' events. A scan merges level 0's tables: in one
// back-to-back pair of ackcheck bench runs at 100 million IDs (65 tables),
// recording took 0.65 the time and verifying 0.84 the time of the
// compacted ledger, at about the same peak RSS (90 against 87 MiB). Pebble
// grows a memtable to its full size only as it fills. Past ledgerL0Tables,
// Pebble compacts level 0 while the load runs: CPU it has not spent before.
func writeOnce(po *pebble.Options, opts Options) {
	po.MemTableSize = cmp.Or(opts.memTableSize, memTableFor(opts.ExpectedMessages))
	po.L0CompactionThreshold = ledgerL0Tables
	po.L0CompactionFileThreshold = ledgerL0Tables
	po.L0StopWritesThreshold = math.MaxInt32
	if opts.memTablesQueued > 0 {
		po.MemTableStopWritesThreshold = opts.memTablesQueued
	}
}

// Memtable sizing (Options.ExpectedMessages).
const (
	maxMemTable        = 32 << 20
	minMemTable        = 1 << 20
	walBytesPerMessage = 64
)

// memTableFor is the memtable size for a ledger of about n messages
// (0: not known, the largest).
func memTableFor(n int64) uint64 {
	if n <= 0 || n >= maxMemTable/walBytesPerMessage {
		return maxMemTable
	}
	return uint64(max(minMemTable, n*walBytesPerMessage))
}

// ledgerL0Tables is how many level-0 tables a ledger holds before Pebble
// compacts them: about 1.3 billion messages at 32 MiB per table.
const ledgerL0Tables = 500

type shard struct {
	kinds [len("SORLDC")]kindLog // indexed by kindIndex
}

// kindLog is one kind's events of one producer since the last flush. Each
// kind has its own lock: a producer's sends and its outcomes are recorded
// by different goroutines (the load's and the client library's), which
// contended for one lock per shard. The padding keeps two kinds' locks off
// one cache line.
type kindLog struct {
	mu     sync.Mutex
	events []Event
	// spare is the slice the previous Flush wrote, emptied: Record appends
	// into it next, instead of growing a new one from nothing (growing was
	// a tenth of the ledger's cost per event).
	spare []Event
	_     [128 - 8 - 2*24]byte
}

// flushOrder is the order in which Flush takes the kinds from a shard:
// sends last. A message's send is recorded before anything else of it (its
// outcome, a read of it), so whatever of it Flush takes had its send
// recorded before, and the send is in the same flush or an earlier one.
var flushOrder = [len("SORLDC")]int{1, 2, 3, 4, 5, 0}

func kindIndex(k Kind) int {
	switch k {
	case Send:
		return 0
	case Outcome:
		return 1
	case Read:
		return 2
	case LiveRead:
		return 3
	case Delivery:
		return 4
	case Commit:
		return 5
	}
	panic(fmt.Sprintf("ledger: unknown kind %q", k))
}

// Ledger is an open ledger. Record may be called from any number of
// goroutines; Close must be called once, after the last Record.
type Ledger struct {
	db   *pebble.DB
	opts Options
	fs   vfs.FS
	// reserve is the free space below which Flush refuses to commit
	// (roomToFlush): room for Pebble's next log (reserveFor).
	reserve uint64

	shardsMu sync.RWMutex
	shards   map[uint32]*shard
	// fastShards are the shards of producers 0..1023, also in shards.
	fastShards [1024]atomic.Pointer[shard]

	flushMu sync.Mutex // serialises flushes and guards fragNo, flushes, events, sentThru, commits, sortScratch, sortBounds
	// tookKind, set by tests only, is called after Flush took one kind
	// from a shard and before it takes the next.
	tookKind func()
	fragNo   uint32
	flushes  uint32 // flush records committed (whole.go)
	events   uint64 // events committed, all kinds, ever
	// sortScratch and sortBounds are sortBySeq's buffers.
	sortScratch []Event
	sortBounds  []int
	commits     *commitLog
	sentThru    map[uint32]uint64 // highest committed Send seq+1 per producer
	pending     atomic.Int64
	kick        chan struct{}
	stop        chan struct{}
	done        chan struct{}
	flushErr    atomic.Pointer[error]
	flushedAt   atomic.Int64
	// longestCommit is the longest a flush's commit took so far (ns):
	// with the flush clock it bounds a crash's window (FlushClock).
	longestCommit int64
	dir           string
	// readOnly: opened by OpenReadOnly; proof is what it proved.
	readOnly bool
	proof    Proof
	// damaged is set once Pebble reported damage or a fatal error (catch):
	// Close then neither flushes nor lets Pebble's own invariant checks
	// panic on the way out, nor waits on it for long.
	damaged     atomic.Bool
	damagedPath atomic.Pointer[string] // the first file Pebble found damaged
	// writeFailed is the first error of a commit Pebble could not make
	// (catch). Pebble may still hold its commit lock after it, so every
	// later Flush or PutMeta returns it at once rather than wait forever.
	writeFailed atomic.Pointer[error]
	// backgroundErrs counts Pebble's failed background jobs.
	backgroundErrs atomic.Int64
}

const (
	metaPrefix      = 'M'
	metaFragNo      = "fragno"
	metaEvents      = "events"
	metaSentThrough = "sent-through"
	metaFlushClock  = "flush-clock"
)

// FlushClock is what every flush records about time, in the flush's own
// batch: when the last committed flush took its events, and the longest
// a commit had taken before it. After a crash of ackcheck it bounds what
// the ledger can have lost: every event it lacks was recorded after
// TakenNs (the flush took everything recorded before), and within one
// CrashWindow of the first of them, or the next flush, due at most one
// FlushInterval after that first one, would have committed them all.
type FlushClock struct {
	TakenNs         int64 `json:"taken_ns"`
	LongestCommitNs int64 `json:"longest_commit_ns"`
}

// CrashWindow is how long after the first event a crash lost the last
// one it lost can have been recorded: one flush interval (the next
// flush takes the first), two commits as long as the longest seen (the
// last committed one's and the next one's, which did not finish) and
// crashSlack for the scheduler. Events the ledger lacks that span more
// than this were not lost in one crash: the ledger lacks more than a
// crash can explain.
func (c FlushClock) CrashWindow(flushInterval time.Duration) time.Duration {
	return flushInterval + 2*time.Duration(c.LongestCommitNs) + crashSlack
}

// crashSlack is what CrashWindow allows beyond the flush interval and
// the commits for the flusher being scheduled late (a loaded machine, a
// garbage collection). Wider lets more of a cut ledger pass as a crash;
// narrower calls a real crash's ledger unproven.
const crashSlack = 50 * time.Millisecond

// FlushClock returns the flush clock of the last committed flush, or
// ErrNoMeta for a ledger written before it was kept (or never flushed).
func (l *Ledger) FlushClock() (FlushClock, error) {
	var c FlushClock
	err := l.GetMeta(metaFlushClock, &c)
	return c, err
}

// Open opens (creating if needed) the ledger in dir and starts its flusher.
func Open(dir string, opts Options) (*Ledger, error) {
	opts.ensureDefaults()
	fs := opts.FS
	if fs == nil {
		fs = vfs.Default
	}
	wals, walBytes := walFiles(fs, dir) // Pebble replays and removes them on open
	if fs == vfs.Default {
		if err := roomToOpen(dir, walBytes); err != nil {
			return nil, err
		}
	}
	l := &Ledger{
		dir:      dir,
		fs:       fs,
		reserve:  reserveFor(cmp.Or(opts.memTableSize, memTableFor(opts.ExpectedMessages))),
		opts:     opts,
		shards:   make(map[uint32]*shard),
		sentThru: make(map[uint32]uint64),
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	po := &pebble.Options{FS: fs, Logger: quietLogger{}, EventListener: &pebble.EventListener{
		// Pebble's default is Logger.Fatalf, from whichever goroutine met
		// the damage (a compaction, too), where no recover can reach it.
		// Noted here, the damage comes back to the reader as the error
		// Pebble returns next to this call.
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			path := info.Path
			l.damagedPath.CompareAndSwap(nil, &path)
			l.damaged.Store(true)
		},
		// Pebble retries a failed flush or compaction, and by default logs
		// every failure: on a full disk that was millions of lines. The
		// first is said once; the ledger's own calls return the error.
		BackgroundError: func(err error) {
			if l.backgroundErrs.Add(1) == 1 {
				fmt.Fprintf(os.Stderr, "ledger: background error (said once): %s\n", firstLine(err.Error()))
			}
		},
	}}
	writeOnce(po, opts)
	db, err := openPebble(dir, po, l)
	if err != nil {
		if errors.Is(err, ErrDiskFull) {
			return nil, err
		}
		return nil, openError(dir, err)
	}
	l.db = db
	if err := l.GetMeta(metaFragNo, &l.fragNo); err != nil && !errors.Is(err, ErrNoMeta) {
		db.Close()
		return nil, err
	}
	if err := l.GetMeta(metaSentThrough, &l.sentThru); err != nil && !errors.Is(err, ErrNoMeta) {
		db.Close()
		return nil, err
	}
	if err := l.GetMeta(metaEvents, &l.events); err != nil && !errors.Is(err, ErrNoMeta) {
		db.Close()
		return nil, err
	}
	var clock FlushClock
	if err := l.GetMeta(metaFlushClock, &clock); err != nil && !errors.Is(err, ErrNoMeta) {
		db.Close()
		return nil, err
	}
	l.longestCommit = clock.LongestCommitNs
	if l.flushes, err = lastFlush(db); err != nil {
		db.Close()
		return nil, err
	}
	commits, data, err := openCommitLog(fs, dir, !opts.NoSync)
	if err != nil {
		db.Close()
		return nil, err
	}
	if err := checkCommits(fs, dir, data, l.fragNo, l.events, wals); err != nil {
		commits.close()
		db.Close()
		return nil, err
	}
	l.commits = commits
	go l.flushLoop()
	return l, nil
}

func (l *Ledger) shard(p uint32) *shard {
	// Producers are numbered from 0: their shards are found without a
	// lock (the read lock was a tenth of Record's cost, contended by
	// every producer and callback).
	if p < uint32(len(l.fastShards)) {
		if s := l.fastShards[p].Load(); s != nil {
			return s
		}
	}
	l.shardsMu.RLock()
	s := l.shards[p]
	l.shardsMu.RUnlock()
	if s != nil {
		return s
	}
	l.shardsMu.Lock()
	defer l.shardsMu.Unlock()
	if s = l.shards[p]; s == nil {
		s = &shard{}
		l.shards[p] = s
		if p < uint32(len(l.fastShards)) {
			l.fastShards[p].Store(s)
		}
	}
	return s
}

// Record buffers e under kind k. It never blocks on disk. It returns the
// error of an earlier failed flush, if any: the ledger is then no longer
// complete and the run must stop.
func (l *Ledger) Record(k Kind, e Event) error {
	if l.readOnly {
		return ErrReadOnly
	}
	kl := &l.shard(e.Producer).kinds[kindIndex(k)]
	kl.mu.Lock()
	kl.events = append(kl.events, e)
	n := len(kl.events)
	kl.mu.Unlock()
	if n == l.opts.FlushEvents {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
	if p := l.flushErr.Load(); p != nil {
		return *p
	}
	return nil
}

func (l *Ledger) flushLoop() {
	defer close(l.done)
	t := time.NewTicker(l.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		case <-l.kick:
		}
		if err := l.Flush(); err != nil {
			l.flushErr.CompareAndSwap(nil, &err)
		}
	}
}

// Flush writes every buffered event to Pebble in one atomic batch and
// returns once it is committed (and synced unless NoSync). It runs once
// per flush interval over every buffered event: its stages
// (flushProducer, commitFlush) keep their scratch in one fragmentWriter
// on Flush's stack, so that splitting them out added no allocation.
func (l *Ledger) Flush() (err error) {
	if l.readOnly {
		return nil // Record refused every event: nothing is buffered
	}
	if err := l.mayCommit(); err != nil {
		return err
	}
	defer l.catch(&err)
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	// Taken before any event is: every event recorded before it is in
	// this flush, so one the ledger lacks was recorded after it.
	taken := time.Now().UnixNano()

	l.shardsMu.RLock()
	producers := make([]uint32, 0, len(l.shards))
	for p := range l.shards {
		if p == CommitProducer {
			continue
		}
		producers = append(producers, p)
	}
	if _, ok := l.shards[CommitProducer]; ok {
		// The group's commits are taken before any message's events: a
		// member records a poll's deliveries before the commit that covers
		// them, so whatever commit this flush takes has its deliveries in
		// this flush or an earlier one, and a crash never leaves a commit
		// whose deliveries are missing (a message falsely skipped).
		producers = append([]uint32{CommitProducer}, producers...)
	}
	l.shardsMu.RUnlock()

	b := l.db.NewBatch()
	firstFrag := l.fragNo
	defer b.Close()
	// Each producer's new sent-through mark, applied once the flush has
	// them all. Apart from fw, whose content the batch keeps: a map in it
	// would go to the heap.
	newSentThru := make(map[uint32]uint64)
	fw := fragmentWriter{b: b}
	for _, p := range producers {
		if err := l.flushProducer(&fw, p, newSentThru); err != nil {
			return err
		}
	}
	if fw.n == 0 {
		return nil
	}
	for p, v := range newSentThru {
		l.sentThru[p] = v
	}
	return l.commitFlush(b, flushRecord{firstFrag: firstFrag, frags: l.fragNo - firstFrag, events: uint64(fw.n), total: l.events + uint64(fw.n)}, taken)
}

// fragmentWriter is one flush's batch and scratch: the key and encoding
// buffers reused for every fragment, and the events written so far (n).
type fragmentWriter struct {
	b   *pebble.Batch
	key [17]byte
	buf []byte
	n   int
}

// flushProducer moves producer p's buffered events of every kind into
// fw's batch, sorted by sequence, in fragments of at most fragmentMax,
// each numbered from l.fragNo, and gives the emptied buffers back to
// Record. A send past p's sent-through mark sets p's new one in sentThru.
// REQUIRES: flushMu held.
func (l *Ledger) flushProducer(fw *fragmentWriter, p uint32, sentThru map[uint32]uint64) error {
	s := l.shard(p)
	var taken [len("SORLDC")][]Event
	for _, ki := range flushOrder {
		kl := &s.kinds[ki]
		kl.mu.Lock()
		taken[ki] = kl.events
		kl.events, kl.spare = kl.spare, nil
		kl.mu.Unlock()
		if l.tookKind != nil {
			l.tookKind()
		}
	}
	for ki, evs := range taken {
		if len(evs) == 0 {
			continue
		}
		fw.n += len(evs)
		evs, l.sortScratch, l.sortBounds = sortBySeq(evs, l.sortScratch, l.sortBounds)
		taken[ki] = evs // the buffer that goes back to Record below
		if kinds[ki] == Send {
			if last := evs[len(evs)-1].Seq + 1; last > l.sentThru[p] {
				sentThru[p] = last
			}
		}
		for start := 0; start < len(evs); start += fragmentMax {
			frag := evs[start:min(start+fragmentMax, len(evs))]
			fw.key[0] = byte(kinds[ki])
			binary.BigEndian.PutUint32(fw.key[1:], p)
			binary.BigEndian.PutUint64(fw.key[5:], frag[0].Seq)
			binary.BigEndian.PutUint32(fw.key[13:], l.fragNo)
			l.fragNo++
			fw.buf = encodeFragment(fw.buf[:0], frag)
			if err := fw.b.Set(fw.key[:], fw.buf, nil); err != nil {
				return fmt.Errorf("ledger batch: %w", err)
			}
		}
	}
	// The batch holds copies: the slices go back to be appended to.
	for ki := range taken {
		kl := &s.kinds[ki]
		kl.mu.Lock()
		kl.spare = taken[ki][:0]
		kl.mu.Unlock()
	}
	return nil
}

// commitFlush adds to b the ledger's counters after the flush r (fragment
// number, sent-through marks, events, and the flush clock with taken,
// when its events were taken) and commits it (commit), timing the commit.
// REQUIRES: flushMu held.
func (l *Ledger) commitFlush(b *pebble.Batch, r flushRecord, taken int64) error {
	if err := l.setMetaIn(b, metaFragNo, l.fragNo); err != nil {
		return err
	}
	if err := l.setMetaIn(b, metaSentThrough, l.sentThru); err != nil {
		return err
	}
	if err := l.setMetaIn(b, metaEvents, r.total); err != nil {
		return err
	}
	if err := l.setMetaIn(b, metaFlushClock, FlushClock{TakenNs: taken, LongestCommitNs: l.longestCommit}); err != nil {
		return err
	}
	commitStart := time.Now()
	if err := l.commit(b, r); err != nil {
		return fmt.Errorf("commit ledger batch of %d events: %w", r.events, err)
	}
	l.longestCommit = max(l.longestCommit, int64(time.Since(commitStart)))
	l.flushedAt.Store(time.Now().UnixNano())
	return nil
}

// commit adds the flush record r to b, commits b (synced unless NoSync)
// and then appends the state after it to the commit record.
// REQUIRES: flushMu held; r.firstFrag+r.frags == l.fragNo.
func (l *Ledger) commit(b *pebble.Batch, r flushRecord) error {
	if err := b.Set(flushKey(l.flushes), r.encode(), nil); err != nil {
		return fmt.Errorf("ledger batch: %w", err)
	}
	wo := pebble.Sync
	if l.opts.NoSync {
		wo = pebble.NoSync
	}
	if err := b.Commit(wo); err != nil {
		return l.diskFull(err)
	}
	l.events = r.total
	l.flushes++
	if err := l.commits.append(commitEntry{fragNo: l.fragNo, events: l.events, flushes: l.flushes}); err != nil {
		return l.diskFull(err)
	}
	return nil
}

// lastFlush returns how many flush records db holds: one more than the
// last one's number.
func lastFlush(db *pebble.DB) (uint32, error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{flushPrefix}, UpperBound: []byte{flushPrefix + 1}})
	if err != nil {
		return 0, fmt.Errorf("read the ledger's flush records: %w", err)
	}
	defer it.Close()
	if !it.Last() {
		return 0, it.Error()
	}
	if k := it.Key(); len(k) == 5 {
		return binary.BigEndian.Uint32(k[1:]) + 1, nil
	}
	return 0, fmt.Errorf("%w: flush record key %x is not one ackcheck wrote", ErrDamaged, it.Key())
}

// SentThrough returns, per producer, one more than the highest sequence
// number whose Send is committed. REQUIRES: sequence numbers of a producer
// are recorded in increasing order (the load guarantees it).
func (l *Ledger) SentThrough() map[uint32]uint64 {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	return maps.Clone(l.sentThru)
}

// Close flushes what is buffered and closes the database.
func (l *Ledger) Close() (err error) {
	if l.readOnly {
		return l.closeDB()
	}
	close(l.stop)
	<-l.done
	if !l.damaged.Load() {
		err = l.Flush()
	}
	if p := l.flushErr.Load(); p != nil {
		err = errors.Join(*p, err)
	}
	return errors.Join(err, l.commits.close(), l.closeDB())
}

// closeDB closes Pebble. After damage or a fatal error, a panic of its
// invariant checks (such as buffers a failed read left in use) is the
// failure already reported, not a new one; and Pebble, which retries a
// failed flush on a full disk, may never finish closing: ackcheck waits
// 10 s for it, then leaves it to the process's exit.
func (l *Ledger) closeDB() error {
	if !l.damaged.Load() {
		return l.db.Close()
	}
	done := make(chan error, 1)
	go func() {
		var err error
		defer func() { done <- err }()
		defer l.afterDamage(&err, "closing the ledger")
		err = l.db.Close()
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		return fmt.Errorf("the ledger's database did not close within 10s after an earlier failure")
	}
}

// ErrNoMeta is returned by GetMeta for a name never set.
var ErrNoMeta = errors.New("ledger: no such metadata")

func metaKey(name string) []byte { return append([]byte{metaPrefix}, name...) }

func (l *Ledger) setMetaIn(b *pebble.Batch, name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode ledger metadata %q: %w", name, err)
	}
	return b.Set(metaKey(name), data, nil)
}

// PutMeta stores v (JSON) under name, durably. It is a commit of its
// own, with a flush record and a commit record entry, so that metadata
// lost from the database is seen as damage like lost events.
func (l *Ledger) PutMeta(name string, v any) (err error) {
	if l.readOnly {
		return ErrReadOnly
	}
	if err := l.mayCommit(); err != nil {
		return err
	}
	defer l.catch(&err)
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	b := l.db.NewBatch()
	defer b.Close()
	if err := l.setMetaIn(b, name, v); err != nil {
		return err
	}
	if err := l.commit(b, flushRecord{firstFrag: l.fragNo, total: l.events}); err != nil {
		return fmt.Errorf("write ledger metadata %q: %w", name, err)
	}
	return nil
}

// GetMeta loads the JSON stored under name into v, or returns ErrNoMeta.
func (l *Ledger) GetMeta(name string, v any) (err error) {
	defer l.catch(&err)
	data, closer, err := l.db.Get(metaKey(name))
	if errors.Is(err, pebble.ErrNotFound) {
		return ErrNoMeta
	}
	if err != nil {
		return fmt.Errorf("read ledger metadata %q: %w", name, err)
	}
	defer closer.Close()
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode ledger metadata %q: %w (the ledger is damaged)", name, err)
	}
	return nil
}

// Count returns the number of events of kind k that satisfy keep (nil: all).
func (l *Ledger) Count(ctx context.Context, k Kind, keep func(Event) bool) (n int64, err error) {
	c, err := l.Scan(k)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	for {
		e, ok := c.Next()
		if !ok {
			break
		}
		if keep == nil || keep(e) {
			n++
		}
		if n&0xfffff == 0 && ctx.Err() != nil {
			return n, ctx.Err()
		}
	}
	return n, c.Err()
}

// roomToOpen refuses to open an existing ledger on a disk without room
// for Pebble to write its replayed log out as a table: Pebble's Open waits
// for that write and, on a full disk, retries it for ever, deaf to signals.
// It needs about the size of the logs; ackcheck asks for twice that and
// 1 MiB more (verify then records what it reads back).
func roomToOpen(dir string, walBytes int64) error {
	if walBytes == 0 {
		return nil
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return nil // cannot tell: let Pebble try
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	if need := 2*walBytes + 1<<20; free < need {
		return fmt.Errorf("%w: the disk holding %s has %d KiB free, and opening the ledger needs about %d KiB "+
			"(twice its %d KiB of write-ahead log, and 1 MiB for the read-back): free space, or copy the run directory to a larger disk",
			ErrDiskFull, dir, free>>10, need>>10, walBytes>>10)
	}
	return nil
}

// openError says why Pebble could not open dir: a lock held by another
// process, damage, or anything else, each with what to do.
func openError(dir string, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "lock"):
		return fmt.Errorf("open ledger %s: %w (another ackcheck is using this run directory; wait for it or use another --out)", dir, err)
	case errors.Is(err, pebble.ErrCorruption) || strings.Contains(msg, "corrupt"):
		return fmt.Errorf("open ledger %s: %w: %w", dir, ErrDamaged, err)
	}
	return fmt.Errorf("open ledger %s: %w", dir, err)
}

// quietLogger drops Pebble's informational chatter, which would interleave
// with ackcheck's progress output, and keeps its errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "ledger: "+format+"\n", args...)
}

// Fatalf is how Pebble reports what it cannot go on from, such as a table
// file whose checksum fails: it must not return. It panics with a
// pebbleFatal that the ledger's methods recover (catch) and return as
// ErrDamaged, so that the user gets a sentence naming the file, never a
// stack trace.
func (quietLogger) Fatalf(format string, args ...any) {
	panic(pebbleFatal{msg: fmt.Sprintf(format, args...)})
}

type pebbleFatal struct{ msg string }

// catch, deferred, turns a panic of Pebble's into an error in *err and
// marks the ledger damaged: a pebbleFatal (Fatalf), and an I/O error
// Pebble panics with when its WAL writer already failed (a commit after a
// write hit ENOSPC panics with that write's error, holding Pebble's commit
// lock: nothing can be committed after it, so the ledger is done). A
// runtime error or any other panic is a bug and goes on.
func (l *Ledger) catch(err *error) {
	r := recover()
	if r == nil {
		return
	}
	var msg string
	switch v := r.(type) {
	case pebbleFatal:
		msg = v.msg
	case runtime.Error:
		panic(r)
	case error:
		if errors.Is(v, syscall.ENOSPC) {
			l.damaged.Store(true)
			*err = fmt.Errorf("%w: the disk holding %s is full: %w", ErrDiskFull, l.dir, v)
			l.writeFailed.CompareAndSwap(nil, err)
			return
		}
		msg = "writing the ledger failed: " + v.Error()
	default:
		panic(r)
	}
	l.damaged.Store(true)
	defer l.writeFailed.CompareAndSwap(nil, err)
	if strings.Contains(msg, "no space left on device") {
		*err = fmt.Errorf("%w: the disk holding %s is full (%s)", ErrDiskFull, l.dir, firstLine(msg))
		return
	}
	*err = fmt.Errorf("%w: %s; no verdict can be given from it", ErrDamaged, firstLine(msg))
}

// roomToFlush refuses a flush, as ErrDiskFull, once the ledger's disk has
// less free space than its reserve, and from then on every write (the
// ledger stays as its last commit left it, whole). Pebble must not meet a
// full disk itself: when its new log cannot be made or the old one closed,
// it panics with its lock released under a deferred unlock, and the Go
// runtime ends the process ("fatal error: sync: unlock of unlocked
// mutex"), past any recover (seen with an unsynced ledger in tests).
// A filesystem that cannot say its free space is not checked.
func (l *Ledger) roomToFlush() error {
	du, err := l.fs.GetDiskUsage(l.dir)
	if err != nil || du.TotalBytes == 0 || du.AvailBytes >= l.reserve {
		return nil
	}
	err = fmt.Errorf("%w: the disk holding %s has %s free, less than the %s the ledger keeps in reserve for its next log; what was committed so far stays whole",
		ErrDiskFull, l.dir, mib(du.AvailBytes), mib(l.reserve))
	l.writeFailed.CompareAndSwap(nil, &err)
	return err
}

// Reserve is the free space a ledger of about n messages keeps (0: not
// known) below which it writes nothing more: a run needs it beside what
// its ledger holds.
func Reserve(n int64) uint64 { return reserveFor(memTableFor(n)) }

// reserveFor: Pebble's next log, which it preallocates to the memtable's
// size, and 1 MiB for the table files and manifest a flush writes beside
// it.
func reserveFor(memTable uint64) uint64 { return memTable + 1<<20 }

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// mayCommit says why the ledger may not commit now: an earlier commit
// failed (failed), or the disk lacks the room a commit needs
// (roomToFlush); nil: it may.
func (l *Ledger) mayCommit() error {
	if err := l.failed(); err != nil {
		return err
	}
	return l.roomToFlush()
}

// failed is the error of the first commit that failed, or nil.
func (l *Ledger) failed() error {
	if p := l.writeFailed.Load(); p != nil {
		return fmt.Errorf("nothing more can be written to the ledger after: %w", *p)
	}
	return nil
}

// ErrDiskFull is returned (wrapped) when the ledger could not be written
// because its disk is full. What was committed before stays valid.
var ErrDiskFull = errors.New("the ledger's disk is full")

// diskFull wraps err as ErrDiskFull when it is ENOSPC.
func (l *Ledger) diskFull(err error) error {
	if err != nil && errors.Is(err, syscall.ENOSPC) && !errors.Is(err, ErrDiskFull) {
		return fmt.Errorf("%w: the disk holding %s is full: %w", ErrDiskFull, l.dir, err)
	}
	return err
}

// afterDamage, deferred, turns a panic of Pebble's invariant checks on the
// way out (buffers a failed read left in use) into an error in *err when
// the ledger is already damaged: it is the failure already reported, not a
// new one. Any other panic goes on.
func (l *Ledger) afterDamage(err *error, what string) {
	r := recover()
	if r == nil {
		return
	}
	if !l.damaged.Load() {
		panic(r)
	}
	*err = fmt.Errorf("%w: %s: %v", ErrDamaged, what, r)
}

// damage turns an error Pebble returned into ErrDamaged naming the file,
// when Pebble reported the damage or the error is one of corruption; other
// errors come back as they are.
func (l *Ledger) damage(what string, err error) error {
	if err == nil || errors.Is(err, ErrDamaged) {
		return err
	}
	if !l.damaged.Load() && !pebble.IsCorruptionError(err) {
		return fmt.Errorf("%s: %w", what, err)
	}
	l.damaged.Store(true)
	file := "a file of the ledger"
	if p := l.damagedPath.Load(); p != nil {
		file = *p
	}
	return fmt.Errorf("%w: %s failed its checksum (%s: %s); no verdict can be given from it", ErrDamaged, file, what, firstLine(err.Error()))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// FlushIntervalOrDefault returns FlushInterval with its default applied.
func (o Options) FlushIntervalOrDefault() time.Duration {
	o.ensureDefaults()
	return o.FlushInterval
}
