// Package group is the group coordinator: Kafka's classic consumer-group
// protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), the consumer
// protocol of KIP-848 (ConsumerGroupHeartbeat; see consumer.go, and
// migration.go for groups moving between the protocols), the membership
// of KIP-932 share groups (ShareGroupHeartbeat, ShareGroupDescribe, and
// the partitions whose share state the group has initialized; see
// share.go), streams groups (KIP-1071: StreamsGroupHeartbeat and
// StreamsGroupDescribe; see streams.go), and the committed
// offsets of groups and standalone consumers (OffsetCommit, OffsetFetch,
// OffsetDelete, and TxnOffsetCommit for transactions), plus the admin views (ListGroups, DescribeGroups,
// DeleteGroups). It follows Apache Kafka's ClassicGroup and
// GroupMetadataManager: the same states, transitions, timeouts and error
// codes.
//
// # States
//
//	          first join                all members joined, or
//	Empty ─────────────────► Preparing  the rebalance timeout ────► Completing
//	  ▲                      Rebalance ───────────────────────────► Rebalance
//	  │ last member gone     ▲   ▲  (no member left: back to Empty)      │
//	  └──────────────────────┘   │                                       │ leader's
//	                             │ join, leave, session or sync          │ SyncGroup
//	                             │ timeout, changed protocols            ▼
//	                             └───────────────────────────────────  Stable
//
// Dead is the state of a group that was deleted (DeleteGroups, or expired
// offsets of an empty group); a Dead group is gone from the coordinator's
// map and only a request racing its removal can see it.
//
// A rebalance collects JoinGroup requests: each is parked until every known
// member has rejoined or the rebalance timeout (the largest of the members')
// passes; dynamic members that did not rejoin are removed, static ones stay
// (they may be restarting; their session timeout removes them) and the
// leader, a member that did rejoin, assigns to them too. The generation then
// increases, a protocol is chosen by vote among those every member supports,
// and each parked JoinGroup is answered; the leader's answer lists the
// members and their metadata so that it can compute the assignment
// client-side. SyncGroup requests are parked until the leader's SyncGroup
// brings the assignment, which is stored (see Persistence) before anyone is
// answered. The first rebalance of an empty group waits
// group.initial.rebalance.delay.ms, extended while new members keep arriving,
// so that a group starting up does not rebalance once per member.
//
// Members are dynamic (the coordinator names them: since JoinGroup v4 the
// first join is answered MEMBER_ID_REQUIRED with the new id, KIP-394) or
// static (group.instance.id, KIP-345): a static member that comes back with
// an unknown member id replaces its old incarnation and, if the group is
// Stable and its protocols are unchanged, gets its assignment back without a
// rebalance; requests carrying the old member id are then FENCED_INSTANCE_ID.
// A member that sends no heartbeat within its session timeout is removed and
// the group rebalances.
//
// # Persistence
//
// Groups and offsets are records of the compacted internal topic
// __consumer_offsets, in Kafka's own key and value formats (kmsg's
// OffsetCommitKey/Value, versions 1 and 3, and GroupMetadataKey/Value,
// versions 2 and 3; consumer and share groups have records of their own,
// consumer_records.go and share_records.go), so Kafka's tools read them. A group belongs to
// partition abs(javaHashCode(groupID)) % the topic's partition count
// (offsets.topic.num.partitions unless SetPartitionCount says what an
// existing topic has), as in Kafka. The coordinator writes through the Log interface (the broker's
// append path for that partition) and answers only after the append;
// records with a nil value are tombstones. At start, and whenever a
// partition becomes ours, Load replays it: offsets are restored, and a group
// whose last metadata record has members comes back Stable with those
// members, who must then heartbeat within their session timeouts (more
// members than group.max.size allows: it rebalances at once). Requests
// for a group in a partition still loading get COORDINATOR_LOAD_IN_PROGRESS;
// for a partition we do not own, NOT_COORDINATOR.
//
// Transactional commits (TxnOffsetCommit, Kafka's transactions V1) are
// written as one transactional batch carrying the producer's id and epoch
// and base sequence -1, as Kafka writes them; the log refuses a stale
// epoch (INVALID_PRODUCER_EPOCH). Their offsets are held as pending for that
// producer, invisible to OffsetFetch, which with RequireStable answers
// UNSTABLE_OFFSET_COMMIT for a partition that has some. After the broker
// has appended the producer's end-transaction marker (a control batch) to
// the partition it calls CompleteTxn: on commit each pending offset becomes
// the committed one unless the committed one's record is later in the log
// (a plain commit written after the transaction's record wins, as Kafka
// compares record offsets, which Log.Append returns); on abort they are
// dropped. Load replays the same way: offset records of transactional
// batches go to pending per producer, markers commit or drop them, and
// those left at the end stay pending until CompleteTxn (one called while
// the partition loads is applied as the load completes). As in Kafka, an
// offset tombstone (OffsetDelete, DeleteGroups, which writes one for
// partitions with only a pending offset too) also removes the pending
// offsets of that partition, so a later commit marker brings nothing back;
// expiration spares a partition with a pending offset and never deletes a
// group with an open transaction. Unload forgets pending offsets with the
// rest; the next leader replays them.
//
// # Concurrency
//
// The Coordinator's mutex guards the map of groups and the partition
// states; each group has its own mutex guarding everything in it. Lock
// order: Coordinator.mu, then a group's mu; Log appends happen under the
// group's mu (a group's changes are written in order) and never under
// Coordinator.mu. Parked JoinGroup and SyncGroup requests are callbacks
// called with the group's mu held; they must only hand the response over
// (the broker sends it on a channel). Timers (Clock.AfterFunc) carry the
// sequence number they were armed with and do nothing when it is stale.
// The index of the groups holding each producer's open transaction has its
// own mutex, taken last (possibly under a group's mu) and held briefly.
package group
