// Package share holds the in-flight record state of one share-partition:
// a topic partition consumed by a share group (KIP-932, queues for
// Kafka), whose records are handed out one by one to whichever member
// fetches, and acknowledged one by one. It follows Apache Kafka's
// SharePartition, without its I/O, timers or locks: the caller (the
// broker's share fetch path) serialises calls, reads the log, persists
// snapshots and drives the clock.
//
// # The window
//
//	        start (SPSO)                              end
//	             │                                     │
//	… done       ▼                                     ▼   not yet read …
//	─────────────┬───────┬───────┬────────┬───────┬────┬──────────────────
//	             │ Acq m1│ Avail │ Acked  │ Acq m2│Arch│
//	─────────────┴───────┴───────┴────────┴───────┴────┴──────────────────
//	             ◄──────────── in flight ──────────────►
//
// The share-partition start offset (SPSO) is the first offset the group
// is not done with: every record below it was acknowledged, archived, or
// dropped from the log. The in-flight window [start, end) holds one state
// per offset:
//
//   - Available: may be handed out (again);
//   - Acquired: handed to one member, under an acquisition lock;
//   - Acknowledged: processed (an Accept);
//   - Archiving: never to be delivered again, on its way to the group's
//     dead-letter queue (KIP-1191; Config.DLQ): a Reject, or a record that
//     reached the delivery limit, when the group has one. The caller takes
//     them (TakeArchiving), writes them to the queue, and archives them
//     (FinishArchiving); the start does not pass them before that. They
//     are persisted as such, so a new leader sends them again;
//   - Archived: never to be delivered again (a Reject or a record that
//     reached the delivery limit without a dead-letter queue, an offset
//     no log batch holds, one the queue has).
//
// Offsets at or past end have not been read for the group yet. FetchOffset
// is where the next read of the log should start: the first Available
// offset in the window, or end.
//
// # Acquiring
//
// Acquire takes the batches the caller read from the log at FetchOffset
// and hands records in them to a member: first Available records of the
// window (redeliveries), then records past end, which grow the window.
// Offsets between batches (removed by compaction, or batches the caller
// left out, such as control batches or aborted transactions) are archived
// as the window grows over them. Whole batches are taken until the
// member's record count is reached, so a client sees batch boundaries; in
// strict mode (KIP-1206) the count is never exceeded. The window does not
// grow by a new batch once it holds MaxInFlight offsets, though one batch
// may take it past that; in strict mode it never goes past.
//
// Each acquisition adds one to the record's delivery count and locks it
// to the member until now + LockDuration. The lock ends when the member
// acknowledges the record, when its share session ends (ReleaseMember),
// or when the deadline passes (ExpireLocks; NextDeadline tells the caller
// when to call it). A Renew acknowledgement (KIP-1222) restarts the lock.
// A released record becomes Available again, unless its delivery count
// has reached DeliveryLimit: then it is Archived. A record released
// because its member's session ended was not delivered, as Kafka counts:
// its delivery count goes back down and it is never archived then.
//
// # Acknowledging
//
// Acknowledge is all or nothing: malformed batches are INVALID_REQUEST,
// and an offset that is not in the window, not Acquired, or acquired by
// another member is INVALID_RECORD_STATE; then nothing changes.
//
// # Moving the start
//
// Whenever the records at the start are Acknowledged or Archived, the
// start moves past them; when the window empties, start and end meet.
// AdvanceStart moves it to the log's start offset when retention or
// DeleteRecords removed records below it, dropping their state, acquired
// or not; Reset (AlterShareGroupOffsets) drops the whole window.
//
// # Snapshots
//
// A Snapshot is the persisted state (Kafka's share-group state records):
// the start offset and the window as runs of equal state and delivery
// count. Acquired records are written as Available with their delivery
// count, since a lock does not survive a restart. NewPartition rebuilds a
// partition from one; offsets between the runs, below the last one, are
// Available with no deliveries.
package share
