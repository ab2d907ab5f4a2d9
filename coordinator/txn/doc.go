// Package txn is the transaction coordinator: Kafka's transactions V1
// (the producer epoch changes only through InitProducerId and fencing) and
// V2 (KIP-890 part 2, transaction.version 2: the epoch is bumped at every
// EndTxn, see "Transactions V2" below). The broker hands it decoded
// InitProducerId (with a transactional id), AddPartitionsToTxn,
// AddOffsetsToTxn, EndTxn, DescribeTransactions and ListTransactions
// requests and sends back what it answers. It follows
// Apache Kafka's TransactionCoordinator, TransactionStateManager,
// TransactionMetadata and TransactionMarkerChannelManager: the same states,
// transitions, records and error codes.
//
// # States
//
// Each transactional id has a producer id and epoch, a transaction timeout
// and a state:
//
//	          InitProducerId (new id; or epoch bump, or a new producer
//	          id once the epoch is exhausted)
//	┌──────┐◄──────────────────────────────────────────────┐
//	│Empty │  AddPartitionsToTxn / AddOffsetsToTxn         │
//	└──┬───┘                                               │
//	   ▼                                                   │
//	┌───────┐  EndTxn(commit)   ┌─────────────┐ markers ┌──┴───────────┐
//	│Ongoing├──────────────────►│PrepareCommit├────────►│CompleteCommit│
//	└──┬─┬──┘                   └─────────────┘ written └──────────────┘
//	   │ │     EndTxn(abort)    ┌─────────────┐         ┌──────────────┐
//	   │ └─────────────────────►│PrepareAbort ├────────►│CompleteAbort │
//	   │                        └─────────────┘         └──────────────┘
//	   │ InitProducerId, or the        ▲       Complete* ─► Ongoing on the
//	   │ transaction timeout:          │       next AddPartitionsToTxn,
//	   └──► PrepareEpochFence ─────────┘       ─► Empty on InitProducerId,
//	        (epoch bumped, never written)      ─► Dead when the id expires
//	                                             (from Empty too)
//
// An Ongoing transaction whose producer is replaced (InitProducerId with
// the same transactional id) or whose timeout passes (checked every
// AbortTimedOutInterval) is aborted by the coordinator with the epoch
// bumped, so that the old producer is fenced: Kafka's PrepareEpochFence,
// which exists only between the decision and the PrepareAbort record (it
// carries the new epoch). InitProducerId then answers
// CONCURRENT_TRANSACTIONS and the client retries until the abort is
// complete, bumping the epoch once more. An id that stays Empty, or
// Complete*, for IDExpiration is removed with a tombstone (checked every
// RemoveExpiredInterval); Dead is the state of such an id, which is gone
// from the coordinator's map.
//
// EndTxn is answered once PrepareCommit or PrepareAbort is written; the
// markers are then written in the background through Markers, one control
// batch per partition of the transaction, with the producer's id and epoch,
// the coordinator epoch of the __transaction_state partition and the
// client's transaction.version (which the leaders check the epoch by:
// WriteTxnMarkers v2). Written
// partitions leave the transaction; ones answering UNKNOWN_TOPIC_OR_PARTITION
// (deleted topics) are dropped; retriable errors are retried with a
// backoff. When none is left, CompleteCommit or CompleteAbort is written.
// Meanwhile the transaction is pending (Kafka's pendingState) and every
// request of its producer gets CONCURRENT_TRANSACTIONS.
//
// # Transactions V2
//
// A producer on V2 sends no AddPartitionsToTxn or AddOffsetsToTxn: the
// leader of each partition it writes to, and the group coordinator of
// the offsets it commits, add the partition for it (AddPartitionsToTxn
// v4+ from a broker, without VerifyOnly). EndTxn v5 bumps the epoch as it
// writes PrepareCommit or PrepareAbort; the markers carry the new epoch,
// so a late batch of the ended transaction is fenced in every partition,
// and the answer gives the producer that epoch for its next transaction.
// When the bump reaches the last epoch, a new producer id is allocated
// (nextProducerID) and taken once the transaction completes. Each
// transaction records the version of the client request that last changed
// it (clientVersion, ClientTransactionVersion in the record), which its
// markers carry. An EndTxn follows the rules of its own version, as in
// Kafka: a retried EndTxn v5 carries the epoch before the bump (or the
// previous producer id at the last epoch) and is answered as a retry,
// and a v5 abort with no transaction open bumps the epoch and completes
// at once (a produce may have failed before adding its partition).
// Fencing an open transaction (timeout, or a new producer's
// InitProducerId) bumps the epoch once, the fence's bump standing for the
// end's, as Kafka's coordinator does since KAFKA-19367; a V2 commit at
// the epoch before it is then answered PRODUCER_FENCED (KAFKA-20785).
//
// # Persistence
//
// Transactional ids are records of the compacted internal topic
// __transaction_state, in Kafka's own formats (kmsg's TxnMetadataKey v0
// and TxnMetadataValue v1, whose tagged fields a V2 transaction fills), so
// Kafka's tools read them. An id belongs to partition
// abs(javaHashCode(id)) % the topic's partition count
// (transaction.state.log.num.partitions unless SetPartitionCount says what
// an existing topic has), as in Kafka. Every change is written through the Log interface and answered
// only after the append; a failed append changes nothing in memory and is
// answered with Kafka's mapping of the append error (NOT_COORDINATOR,
// COORDINATOR_NOT_AVAILABLE, ...). Expired ids get a tombstone (nil value).
// Load replays a partition, the last record of each id winning; requests
// for ids in a partition still loading get COORDINATOR_LOAD_IN_PROGRESS,
// for a partition we do not own NOT_COORDINATOR. Transactions replayed in
// PrepareCommit or PrepareAbort have their markers written again, with the
// new coordinator epoch, and are then completed.
//
// # Concurrency
//
// Coordinator.mu guards the map of transactional ids, the partitions'
// states and the timers; each id's txnMetadata has its own mu guarding
// everything in it. Lock order: Coordinator.mu, then a txnMetadata's mu;
// requests look an id up under Coordinator.mu, let go of it, then lock the
// id (and retry the lookup if the id was removed meanwhile). Log appends
// and producer id allocation happen under the id's mu (an id's changes are
// written in order) and never under Coordinator.mu; Coordinator.mu is
// never waited for with an id's mu held, nor an id's mu with
// Coordinator.mu held (except a new id's, which nobody else can see yet).
// Markers.WriteMarkers is called with no lock held, from a goroutine per
// round of markers; retries wait on Clock timers. Close waits for those
// goroutines (Coordinator.workersMu, a leaf lock, guards starting them). A
// partition that is unloaded (or loaded again) is marked gone, so that
// writes and marker rounds still in flight for it are abandoned and
// answered NOT_COORDINATOR, as Kafka does when the coordinator epoch
// changes under an append.
package txn
