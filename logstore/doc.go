// Package logstore is the partition log as a library: segments, sparse
// indexes, checkpoints, crash recovery, idempotent-producer and
// transaction state (last stable offset, aborted-transaction index), all in
// Apache Kafka's own on-disk format, so that Kafka's tools (DumpLogSegments)
// read what Gregor writes and Gregor reads what Kafka wrote. It imports no
// networking code; record batches come from and go to package protocol.
//
// # Layout of a log dir
//
//	<log.dirs entry>/
//	  meta.properties                     who owns the dir (text)
//	  .lock                               flock'ed while a Dir is open
//	  .kafka_cleanshutdown                present only after a clean Close (JSON)
//	  recovery-point-offset-checkpoint    flushed-up-to offset per partition
//	  log-start-offset-checkpoint         log start offset per partition
//	  replication-offset-checkpoint       high watermark per partition
//	  cleaner-offset-checkpoint           first dirty offset per compacted partition
//	  <topic>-<partition>/
//	    partition.metadata                the topic id (text)
//	    leader-epoch-checkpoint           leader epoch -> start offset (text)
//	    00000000000000000000.log          record batches
//	    00000000000000000000.index        offset index
//	    00000000000000000000.timeindex    time index
//	    00000000000000000000.txnindex     aborted transactions whose markers are in the segment
//	                                      (only once there is one)
//	    00000000000000000042.snapshot     producer state as of offset 42
//	    00000000000000000000.log.deleted  (and .index.deleted, .timeindex.deleted, .txnindex.deleted)
//	                                      a segment retention or the cleaner took out,
//	                                      removed after file.delete.delay.ms
//	    00000000000000000000.log.cleaned  (and indexes) a segment the cleaner is writing
//	    00000000000000000000.log.swap     (and indexes) a cleaned segment being swapped in
//
// Segment and snapshot files are named by an offset written as 20 decimal
// digits, zero padded: the segment's base offset (every offset in it is >= the
// base and < the next segment's base), or for a snapshot the log end offset
// the snapshot was taken at. A partition directory being deleted is renamed
// first to <topic>-<partition>.<32 hex digits>-delete; one being moved
// here from another log dir is filled as
// <topic>-<partition>.<32 hex digits>-future (move.go). The .deleted,
// .cleaned and .swap suffixes go after a segment file's own; on open,
// .deleted files are removed and an interrupted swap is finished or undone
// by Kafka's rules (swap.go).
//
// All integers in binary files are big-endian. Text files use "\n" line
// ends and are replaced atomically: written to <name>.tmp, fsynced, renamed
// over <name>, and the directory fsynced. A new partition directory gets
// its files that way and one fsync of the directory for all of them; the
// log dir itself is fsynced once per batch of new partitions (SyncLogDir).
//
// # .log: record batches (magic v2), back to back
//
//	offset size field
//	     0    8 baseOffset            assigned by Append (kept by AppendReplicated), first offset in the batch
//	     8    4 batchLength           bytes after this field (whole batch = 12 + batchLength)
//	    12    4 partitionLeaderEpoch  set by Append from AppendOptions.LeaderEpoch (kept by AppendReplicated)
//	    16    1 magic                 always 2
//	    17    4 crc                   CRC-32C (Castagnoli) of bytes 21..end
//	    21    2 attributes            bits 0-2 codec, 3 LogAppendTime, 4 transactional, 5 control
//	    23    4 lastOffsetDelta       last offset = baseOffset + lastOffsetDelta
//	    27    8 baseTimestamp
//	    35    8 maxTimestamp
//	    43    8 producerId            -1 unless idempotent/transactional
//	    51    2 producerEpoch
//	    53    4 baseSequence
//	    57    4 recordCount
//	    61    . records               compressed with the codec if any
//
// Each record inside is (varints are zig-zag, as in protobuf):
//
//	varint length (of the rest), int8 attributes, varlong timestampDelta,
//	varint offsetDelta, varint keyLength (-1 = null), key,
//	varint valueLength (-1 = null), value, varint headerCount,
//	headers: varint keyLength, key, varint valueLength, value
//
// A record's offset is baseOffset + offsetDelta and its timestamp
// baseTimestamp + timestampDelta, or maxTimestamp when the batch is
// LogAppendTime. The file holds the batches exactly as the producer sent
// them, with baseOffset and partitionLeaderEpoch rewritten (the CRC does not
// cover those) and, for LogAppendTime topics, the attributes and maxTimestamp
// stamped and the CRC recomputed (the broker also sets, as Kafka does, a
// CreateTime batch's maxTimestamp to its records' largest timestamp when
// the producer's header said otherwise).
//
// # .index: sparse offset index, 8-byte entries
//
//	offset size field
//	     0    4 relativeOffset   int32: batch's last offset - segment base offset
//	     4    4 position         int32: byte position of the batch in the .log
//
// An entry is added before appending a batch once more than
// index.interval.bytes of batches went in since the last entry (so the first
// batch of a segment never gets one); the entry names the batch's last offset
// and its start position, as Kafka's LogSegment does. The file holds exactly
// the entries (Kafka preallocates segment.index.bytes for the active segment
// and trims on roll; we never preallocate). Example: base offset 100, batch
// with offsets 110..119 at byte 8230 gives
//
//	00 00 00 13  00 00 20 26
//
// Lookup: the last entry with offset <= target gives a position to start a
// short scan of batch headers from (position 0 when there is none).
//
// # .timeindex: sparse time index, 12-byte entries
//
//	offset size field
//	     0    8 timestamp        int64: largest maxTimestamp seen so far in the segment
//	     8    4 relativeOffset   int32: last offset of the batch that had it - base offset
//
// An entry is written together with each .index entry, and once more when
// the segment is rolled or closed, but only when the timestamp is larger than
// the last entry's (so timestamps and offsets both increase). Example: base
// 100, max timestamp 1700000000000 in the batch ending at offset 119:
//
//	00 00 01 8b cf e5 68 00  00 00 00 13
//
// # .txnindex: aborted transactions, 34-byte entries (Kafka's TransactionIndex)
//
//	offset size field
//	     0    2 version           int16 = 0
//	     2    8 producerId
//	    10    8 firstOffset       first offset of the aborted transaction
//	    18    8 lastOffset        offset of its ABORT marker
//	    26    8 lastStableOffset  first offset of the oldest transaction of another
//	                              producer still open after the marker, else lastOffset + 1
//
// An entry is added, in the segment the marker is written to, for every
// ABORT control batch that ends an open transaction (Append, as the
// coordinator's markers are appended; AppendReplicated; and the replay of a
// recovered segment), so last offsets increase within a file. The file is
// created with the first entry, written with the other indexes (sync, roll,
// close), cut by TruncateTo (entries with lastOffset >= the new end go),
// and goes with its segment. All entries are held in memory, read when the
// segment is opened (a file that does not check out gets its segment
// recovered); a recovered segment's entries are rebuilt by replaying
// producer state from a snapshot at or below it. A marker with no
// transaction open gets no entry, as in Kafka since 2.8 (KAFKA-10702;
// older Kafka wrote one starting at the marker). Example: producer 7
// aborts offsets 0..1 with the marker at 2, nothing else open:
//
//	0000 0000000000000007 0000000000000000 0000000000000002 0000000000000003
//
// The last stable offset (LastStableOffset, txn.go) is the first offset
// of the oldest transaction still open or ended by a marker the high
// watermark has not passed, or the high watermark when lower; a
// read_committed fetch reads below it and asks AppendAbortedTxns which
// aborted transactions it must skip.
//
// # .snapshot: producer state (Kafka's ProducerStateManager, version 1)
//
//	offset size field
//	     0    2 version          int16 = 1
//	     2    4 crc              uint32 CRC-32C of bytes 6..end
//	     6    4 count            int32 number of entries
//	    10   46 entry × count:
//	            +0  8 producerId
//	            +8  2 producerEpoch
//	           +10  4 lastSequence           of the producer's last batch
//	           +14  8 lastOffset             of that batch (-1: none)
//	           +22  4 offsetDelta            lastOffset - firstOffset of that batch
//	           +26  8 timestamp              maxTimestamp of that batch
//	           +34  4 coordinatorEpoch       from the last transaction marker, else -1
//	           +38  8 currentTxnFirstOffset  first offset of the open transaction, else -1
//
// Entries are sorted by producer id. A snapshot named N holds the state after
// every batch below offset N. Snapshots are taken when a segment rolls (N is
// the log end offset, the new segment's base unless a follower's batch
// after a gap starts it higher) and on Close (N is the log end offset); the
// newest two are kept. On open the newest valid snapshot at or below the log
// end is loaded and the batch headers after it are replayed; without one the
// whole log is replayed. A producer idle for producer.id.expiration.ms and
// with no open transaction is dropped from the state (producer_expiry.go).
//
// # leader-epoch-checkpoint, and the three offset checkpoints
//
// Kafka's CheckpointFile: a version line (0), a count line, then one entry
// per line; an empty file is read as no entries.
//
//	leader-epoch-checkpoint:             "0\n2\n0 0\n3 1500\n"    (epoch startOffset)
//	recovery-point-offset-checkpoint,
//	log-start-offset-checkpoint,
//	replication-offset-checkpoint,
//	cleaner-offset-checkpoint:           "0\n1\nmy-topic 0 1500\n" (topic partition offset)
//
// log-start-offset-checkpoint lists only partitions whose log start offset
// is above their first segment's base offset, as Kafka does; it is written
// at its interval, and at once when DeleteRecords moves a start. The
// flusher writes the three offset checkpoints each at its own interval
// (CheckpointIntervals: Kafka's 60 s, 60 s and 5 s for the high
// watermarks), and Close writes all three.
// cleaner-offset-checkpoint holds, for each partition the cleaner has
// cleaned, the offset where its dirty (not yet cleaned) section starts; it
// is rewritten after every clean.
//
// When retention moves a log start offset past leader epoch starts, the
// leader-epoch-checkpoint keeps the last epoch starting at or below it,
// moved to start there (Kafka's truncateFromStart), and producer snapshots
// below it are removed.
//
// # Log lifecycle
//
// Retention (retention.go): every log.retention.check.interval.ms (for a
// compacted log, after each attempt of a cleaner thread, as in Kafka) whole
// segments go from the start of each log: those below the log start offset
// (moved by DeleteRecords), and with the delete policy those beyond
// retention.bytes or retention.ms, the active one included once everything
// has expired (a new empty segment is rolled first). Compaction (clean.go,
// cleaner.go): log.cleaner.threads goroutines pick the compacted log with
// the highest dirty ratio and rewrite its segments keeping each key's
// newest record, tombstones until their delete horizon (KIP-534 batch
// attribute bit 6), offsets and batch headers as Kafka keeps them. It stops
// below the last stable offset; records of aborted transactions neither
// enter its key map nor survive, and transaction markers and .txnindex
// entries are kept (see "Where Gregor differs").
//
// # Replication (replicate.go, truncate.go)
//
// A follower appends with AppendReplicated the batches it fetched from the
// leader, byte for byte: offsets, leader epochs and CRCs as the leader's
// log holds them (each batch's framing and CRC checked, not its records,
// as Kafka's appendAsFollower), gaps left by compaction kept, producer
// state updated without judging sequences, new leader epochs recorded by
// Kafka's LeaderEpochFileCache.assign rules. EndOffsetForEpoch answers
// OffsetForLeaderEpoch from leader-epoch-checkpoint. A follower whose log
// diverged truncates with TruncateTo (segments above go, the one holding
// the offset is cut at a batch boundary, epochs, producer snapshots, high
// watermark and recovery point follow; the checkpoints are rewritten at
// once), and one that fell below the leader's log start restarts empty
// with TruncateFullyAndStartAt. A crash part way through either leaves a
// prefix of the old log, never a torn batch.
//
// replication-offset-checkpoint holds HighWatermark() as of the last
// Checkpoint (the flusher's interval, Close, and every truncation); on
// open the high watermark is read back and clamped to [log start, log
// end], so after a crash it can only be older (lower) than it was.
//
// # partition.metadata
//
//	"version: 0\ntopic_id: <id>"      no final newline
//
// where <id>, like every Kafka Uuid in text, is the 16 bytes in URL-safe
// base64 without padding (22 characters), e.g. "AAAAAAAAAAAAAAAAAAAAAQ" for
// 00..01.
//
// # meta.properties (KRaft, version 1)
//
// A java.util.Properties file: a blank comment line, a date comment, then
// key=value lines.
//
//	#
//	#Tue Mar 05 10:47:12 UTC 2024
//	node.id=1
//	directory.id=<Uuid>
//	version=1
//	cluster.id=<cluster id>
//
// # .kafka_cleanshutdown
//
//	{"version":0,"brokerEpoch":-1}
//
// Written last by a clean Close, with the broker epoch SetBrokerEpoch gave
// (a cluster broker's registration; -1 on a single node), which the next
// start reads (PreviousBrokerEpoch) and sends when it registers (KIP-966). When it is present on open, the recovery
// point checkpoint is trusted and no segment is scanned; when it is absent,
// every segment from the one holding the recovery point onwards is read
// batch by batch, checking length, magic and CRC; at the first bad or torn
// batch the segment is cut there, every later segment is deleted, and the
// indexes of the recovered segments are rebuilt. A log that then ends
// below its log-start-offset-checkpoint entry (its tail lost after
// DeleteRecords, or files removed) loses every segment and starts empty at
// that log start, as in Kafka. Either way the marker is deleted once the
// dir is open.
//
// # Concurrency
//
// A Log serialises appends (and rolls, flush bookkeeping, close) with one
// mutex. Readers take no lock on the append path: the segment list is an
// immutable slice swapped atomically, a segment's readable size and the log
// end offset are atomics stored only after the bytes are written, and each
// segment's in-memory indexes sit behind their own RWMutex held for
// nanoseconds. Indexes of segments other than the active one are read into
// memory on first use. Retention and the cleaner work on a log under its
// cleanMu, one at a time, and take Log.mu only to change the segment list;
// the segments they take out stay open until file.delete.delay.ms has
// passed, so reads that loaded the old list finish. A truncation takes
// cleanMu (asking a clean in progress to stop), flushMu and mu, and
// writes the Dir's checkpoints after letting them go. The first unstable
// offset is an atomic too, kept by a small transaction state under its own
// lock, which SetHighWatermark takes without Log.mu. Lock order: Dir.mu,
// Log.cleanMu, cleaner.mu, Log.flushMu, Log.mu, segment.ioMu (index file
// writes), segment.mu; the transaction state's lock comes after Log.mu and
// is never held with a segment's.
//
// # Open files
//
// A segment keeps one file descriptor, its .log (Kafka keeps one too, having
// mmapped its indexes). The index entries live in memory; the index files
// are opened only to be read (when loaded) or written, and closed at once.
// The active segment's new entries are written in one go when the segment
// is synced (Flush, a flush.messages flush), finished (roll, Close) or
// recovered, so its index files lag behind memory in between. A crash can
// lose only entries of segments the recovery point has not passed (a sync
// writes the entries before the point moves), and recovery rebuilds the
// indexes of those.
//
// # Where Gregor differs from Kafka
//
// The cleaner keeps every transaction marker and every .txnindex entry,
// whereas Kafka removes a marker (and its entry) once no record of its
// transaction is left and delete.retention.ms has passed: a few bytes per
// transaction more, which consumers skip.
//
// Index entries are decided per batch (Kafka decides per append call, which
// is the same for the one-batch appends produce requests make, and per batch
// when it rebuilds an index); index files are never preallocated; producer
// snapshot entries are sorted by producer id (Kafka writes hash order). None
// of this changes what Kafka or DumpLogSegments read.
package logstore
