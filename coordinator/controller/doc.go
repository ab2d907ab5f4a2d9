// Package controller is the cluster controller quorum: the replicated
// metadata of a Gregor cluster (brokers, topics, partition assignments,
// leaders, ISRs, epochs, config overrides, producer-id blocks) and the
// active controller that changes it, after Kafka KRaft's QuorumController,
// ClusterControlManager and ReplicationControlManager.
//
// # Consensus
//
// Consensus is github.com/hashicorp/raft, not ours. Every voter of
// controller.quorum.voters runs one raft server (ServerID = node id in
// decimal, address = its CONTROLLER listener) with a raft-boltdb log and
// stable store (raft.db) and raft's FileSnapshotStore (snapshots/) under
// Config.Dir. There is no format step: a voter without raft state
// bootstraps the cluster with the voter set from its configuration
// (controller.quorum.voters, or the voters kafka-storage format
// --initial-controllers wrote, which the broker reads), and all voters
// doing so with the same set is what raft expects. From then on the voter
// set is raft's configuration, changed by AddRaftVoter and
// RemoveRaftVoter (voters.go, KIP-853) in a dynamic quorum only, which a
// static one becomes by raising kraft.version (kraft_upgrade.go). The
// first active controller writes the cluster id, Config.ClusterID or a
// random one, when the metadata has none, with Config.InitialControllers
// and, when there are some, kraft.version 1: the quorum is dynamic.
//
// A node that is not a voter (process.roles=broker) runs the same code as
// an observer: a raft non-voter with its own raft state, which the active
// controller adds (AddNonvoter) when the node's broker registers, dialing
// the endpoint of Config.ObserverListener (unset: the first endpoint, where
// a Gregor broker registers its inter-broker listener); the broker hands
// raft streams arriving there to HandOff as on a CONTROLLER listener.
// Observers follow the log and serve Image, but never lead.
//
// Raft's traffic shares the broker's CONTROLLER listener. Its streams start
// with RaftMagic ("RAFT"), which as a Kafka frame size (1.3 GiB) no request
// can have; the broker reads four bytes of each accepted connection and
// either passes it to HandOff (raft) or serves Kafka frames on it through
// Handle (ServeKafka does the latter for it). The raft transport is raft's
// NetworkTransport over a stream layer whose Dial writes the magic and
// whose Accept returns the handed-off connections. Config.Security is
// the CONTROLLER listener's client side: over SSL, raft streams and the
// Client's requests go over TLS, to voters and observers alike (a
// broker-only node's observer listener is then SSL too), and the broker
// completes the handshake before it reads the magic; over SASL they log
// in first (SaslHandshake, SaslAuthenticate) and the broker hands a
// stream to raft when the magic follows a successful login.
//
// # State
//
// The state is an Image: immutable values, replaced as a whole on every
// applied raft entry (copy-on-write of the maps; unchanged brokers and
// topics are shared). Image() returns the current pointer, which readers
// may keep; Changed() returns a channel closed at the next apply.
// Image.Offset is the raft index of the last applied entry: a broker's
// metadata offset in BrokerHeartbeat is compared with it.
//
// A raft entry is a JSON array of Records applied atomically. Records carry
// results, not intents: RegisterBroker, BrokerState (fenced, shutting
// down), BrokerOfflineDirs (its failed log dirs, dirs.go),
// BrokerCordonedDirs (its cordoned log dirs, KIP-1066),
// UnregisterBroker, Topic, RemoveTopic, Partition (the whole new
// partition state), Config (the whole override set of a resource),
// NextProducerID, Features (every stored feature level), Controller (a
// controller's listeners and directory id, voters.go),
// UnregisterController and ClusterID. So
// the state machine only installs values and every replica
// computes the same image; all decisions (placement, elections, epochs)
// are the active controller's. The one value the state machine derives is
// a broker's epoch, which is the raft index of its RegisterBroker record.
// Snapshots are the image as JSON.
//
// # The active controller
//
// The raft leader becomes the active controller once a raft barrier has
// applied everything committed before its term. It handles the controller
// APIs (Handle) one request at a time under one mutex: read the image,
// decide, propose the records, wait until they are applied locally, answer.
// Any other node answers NOT_CONTROLLER, as does a leader whose proposal
// fails; Client sends to the last voter that answered and moves on to the
// others on NOT_CONTROLLER or a connection error.
//
// Broker liveness is in memory on the active controller only: the time of
// each broker's last heartbeat, reset for every broker when a controller
// becomes active. A ticker fences unfenced brokers that have not
// heartbeated for SessionTimeout.
//
// Broker states follow Kafka's BrokerHeartbeatManager. A registration
// starts fenced; a new incarnation id replaces the old registration (new
// epoch, so the old process's heartbeats get STALE_BROKER_EPOCH) and moves
// leadership away from it; the same incarnation re-registering keeps its
// epoch. A heartbeat without WantFence whose metadata offset reached the
// broker's epoch unfences it; WantFence fences it; WantShutdown on a broker
// that leads partitions starts a controlled shutdown (ShuttingDown), and
// ShouldShutdown (with fencing) comes once it leads nothing and every
// active broker's heartbeats show the metadata offset of that move
// (Kafka's lowestActiveOffset): the new leaders lead before it stops.
//
// # Partition rules (elect.go)
//
// A broker is usable when registered, unfenced and not shutting down.
// Every change of a partition's replicas, ISR or leader goes through
// settle, Kafka's PartitionChangeBuilder with KIP-966's eligible leader
// replicas (ELR), which Kafka 4.1 enables on a new cluster: brokers move
// the high watermark only while the ISR has min.insync.replicas members,
// so replicas leaving an ISR that is below that hold every committed
// record and stay eligible (the ELR); the ISR may shrink to nothing; an
// ISR back at min.insync.replicas (capped at the replica count) clears
// the ELR. Fencing or shutting down a broker takes it out of every ISR
// and, for partitions it leads, elects the first usable ISR member in
// replica order, or with the ISR empty the first usable ELR member (which
// becomes the ISR); with neither, the last known leader (LastKnownELR,
// recorded when the ISR emptied) once it is usable again, or, if unclean
// election is allowed (topic override of
// unclean.leader.election.enable, else the dynamic cluster default, else
// Config.UncleanDefault), the first usable replica, each with ISR = [it];
// otherwise the partition has no leader. A broker registering a new
// incarnation without the epoch its clean shutdown recorded
// (PreviousBrokerEpoch) may have lost its log's unflushed tail: it leaves
// every ISR and ELR, so a replica that kept every committed record is
// elected instead of it. Changing min.insync.replicas clears the ELR of
// the topics it applies to. So that every broker counts the ISR against
// the same number, the active controller writes the cluster-wide
// min.insync.replicas (from Config.MinISRDefault) when ELR is on and
// there is none, and turning ELR on removes brokers' own (brokers refuse
// new ones, and the cluster value's removal). Unfencing a broker elects leaders for
// leaderless partitions. A leader change increments the leader epoch;
// any change increments the partition epoch.
//
// AlterPartition (ISR changes from partition leaders) is checked as Kafka
// checks it (epochs, sender, ISR members) and completes reassignments:
// while one runs, replicas are the target followed by the removing ones,
// and the ISR change that holds every target replica switches to the
// target, electing a new leader if the old one is being removed.
//
// CreateTopics places each partition's replicas on the racks in turn and
// on each rack's brokers in turn, from random starts, unfenced brokers
// first and fenced ones only when those are too few (placement.go),
// leader = first replica, ISR = the unfenced replicas; ElectLeaders runs preferred or unclean elections,
// and every UncleanElectionCheckInterval a ticker elects leaders for
// leaderless partitions (unclean where the topic now allows it);
// with AutoLeaderRebalance a ticker moves leadership back to preferred
// replicas; AllocateProducerIds hands out blocks of 1000 ids;
// AlterClientQuotas stores client quotas (package quota validates them),
// which every broker enforces on its own connections; UnregisterBroker
// removes a registration after the same ISR and leader changes as fencing,
// and takes the broker out of every ELR; UpdateFeatures stores feature
// levels (package internal/features), and eligible.leader.replicas.version
// 0 clears every ELR and turns the ELR rules off.
//
// # DescribeQuorum
//
// The active controller (the raft leader) answers DescribeQuorum as
// KRaft's leader does. Raft indexes are the metadata log's offsets: its
// end offset is the last index, the high watermark the commit index, the
// leader epoch the raft term. hashicorp/raft keeps its followers' match
// indexes private, so the leader's transport (progress.go) records each
// follower's last index and answer time from every AppendEntries answer,
// heartbeats and pipelined appends alike, and keeps Kafka's caught-up
// time by Kafka's rule. Voters are the raft voters; observers are the
// non-voters heard from in the last five minutes.
//
// # Files
//
//	controller.go     Config, Start/Close, leadership, propose
//	transport.go      RaftMagic and the raft stream layer
//	fsm.go            raft FSM: apply, snapshot, restore
//	records.go        the records and how they change an image
//	image.go          the image types
//	handle.go         Handle dispatch and NOT_CONTROLLER answers
//	brokers.go        registration, heartbeats, session expiry, unregistration
//	quorum.go         DescribeQuorum
//	progress.go       the leader's record of its followers' progress
//	elect.go          shared partition rules
//	placement.go      replica placement
//	topics.go         CreateTopics, DeleteTopics, CreatePartitions
//	alterpartition.go AlterPartition and reassignment completion
//	reassign.go       AlterPartitionReassignments, ListPartitionReassignments
//	elections.go      ElectLeaders, auto rebalance
//	producerids.go    AllocateProducerIds
//	configs.go        IncrementalAlterConfigs, AlterConfigs, AlterClientQuotas
//	features.go       UpdateFeatures
//	wire.go, client.go Kafka-protocol framing, ServeKafka and Client
package controller
