// Package sharestate is Kafka's share coordinator (KIP-932): it keeps the
// state of every share-partition (a share group's view of one partition
// of a topic) in the internal topic __share_group_state and serves
// InitializeShareGroupState (API 83), ReadShareGroupState (84),
// WriteShareGroupState (85), DeleteShareGroupState (86) and
// ReadShareGroupStateSummary (87). The broker hands it decoded kmsg
// requests and sends back what it answers; the share-partition leaders
// (the brokers leading the topics' partitions) and the group coordinator
// are its clients. It follows Apache Kafka's ShareCoordinatorService and
// ShareCoordinatorShard as of Kafka 4.4: the same records, rules and
// error codes.
//
// # State
//
// A share-partition, named by (group id, topic id, partition) and by its
// Key "group:topicId:partition", has a state epoch (moved by the group
// coordinator when it starts the share-partition over, e.g. after its
// offsets are reset), a leader epoch (of the partition's leader serving
// it), a snapshot epoch (counting its snapshots), a start offset, the
// delivery complete count of KIP-1226, create and write timestamps and
// its state batches: runs of offsets at or after the start offset with a
// delivery state (0 available, 2 acknowledged, 4 archived) and delivery
// count; offsets past the last batch have not been delivered.
//
//   - Initialize gives a share-partition a state epoch and start offset
//     and no batches; a state epoch below the highest the share-partition
//     has had is FENCED_STATE_EPOCH, anything else starts it over.
//   - Read answers the state epoch, start offset and batches. A leader
//     epoch below the highest seen is FENCED_LEADER_EPOCH; a higher one
//     (a new leader reading the state it starts from) is written before
//     the answer, so that the previous leader's writes are fenced.
//   - Write merges the leader's batches into the stored ones
//     (combineBatches, Kafka's PersisterStateBatchCombiner), moves the
//     start offset forward (never back: -1 keeps it), and is fenced by a
//     lower leader or state epoch. It changes neither epoch.
//   - ReadSummary answers the epochs, start offset and delivery complete
//     count, without batches (the group coordinator and admin tools use
//     it); it writes and fences nothing.
//   - Delete removes the state.
//
// A negative partition, or a negative leader or state epoch where one is
// checked, is INVALID_REQUEST. So is Read or Write of a share-partition
// never initialized ("Read/Write operation on uninitialized share
// partition not allowed."; Kafka's first versions answered such a Read
// with start offset -1 and state epoch 0); ReadSummary answers it as
// start offset -1, epochs 0, delivery complete count -1, and Delete
// succeeds without a record. Kafka also answers
// UNKNOWN_TOPIC_OR_PARTITION for a topic or partition its metadata image
// lacks; this coordinator has no view of the topics, so that check, like
// authorization (CLUSTER_ACTION), is the broker's.
//
// A request without a group id or topics, or (except Initialize) with a
// topic without partitions, is answered with no topics, as Kafka does.
// Otherwise each share-partition is handled and answered on its own, with
// its own error code and message.
//
// # Persistence
//
// State is written as Kafka's records (records.go): every change appends
// one ShareSnapshot record (key version 0: GroupId, TopicId, Partition;
// value ShareSnapshotValue v0, flexible: SnapshotEpoch, StateEpoch,
// LeaderEpoch, StartOffset, CreateTimestamp, WriteTimestamp,
// StateBatches, and the delivery complete count as tagged field 0) with
// the share-partition's whole new state, or for Delete a tombstone of that
// key, in an uncompressed batch with no producer id, and the answer is
// given once the append returned; a failed append changes nothing and is
// answered with Kafka's mapping of the error (NOT_COORDINATOR,
// COORDINATOR_NOT_AVAILABLE, UNKNOWN_SERVER_ERROR, ...). Each snapshot
// takes the next snapshot epoch and the current time as both timestamps,
// as Kafka's snapshots written on a write do. Kafka writes ShareUpdate
// records (key version 1, ShareUpdateValue: the changed batches only)
// between snapshots; Gregor writes none but replays them, so a log
// written by Kafka loads: an update is merged into the state the records
// before it built, as Kafka's ShareCoordinatorShard.replay does.
//
// Since the last record of a key is the share-partition's whole state,
// the broker creates __share_group_state compacted (cleanup.policy
// compact): compaction keeps exactly what Load needs. (Kafka creates it
// with cleanup.policy delete and retention.ms -1, and deletes the records
// every share-partition has superseded with DeleteRecords, because its
// updates are not whole states.) Compaction loses only the history of
// epochs: a share-partition is fenced by the highest leader and state
// epochs its replayed records carried (Kafka's leaderEpochMap and
// stateEpochMap), which after compaction are those of its last snapshot.
// ShareUpdate records in a log Kafka wrote have keys of their own, which
// compaction keeps beside the snapshot's; replayed in log order, an
// update older than the last snapshot is overwritten by it.
//
// A share-partition belongs to __share_group_state partition
// abs(javaHashCode(Key)) % partitions (PartitionFor), as in Kafka; Load
// replays a partition and Unload forgets it. Requests for a
// share-partition whose partition is not loaded here get NOT_COORDINATOR,
// while it loads COORDINATOR_LOAD_IN_PROGRESS.
//
// # Concurrency
//
// Coordinator.mu guards the partitions' incarnations and their loading
// and unloaded flags; each incarnation's mu guards its states and key
// locks. A request takes the share-partition's key lock (held from reading
// its state to applying what it appended, so that requests for one
// share-partition are written and applied in order) and takes the
// incarnation's mu only briefly, never waiting for Coordinator.mu with
// either held. Requests for different share-partitions append
// concurrently. An incarnation that is unloaded or replaced by a new Load
// is marked gone: requests whose append returns after that answer
// NOT_COORDINATOR and change nothing, and a new Load waits for the
// requests of the incarnation it replaces before it replays, so that their
// records are in what it reads.
package sharestate
