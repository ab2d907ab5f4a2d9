// Package clustertest runs the real gregor binary as a three-node cluster
// on 127.0.0.1 and breaks it the ways real clusters break: kill -9,
// SIGTERM, SIGSTOP/SIGCONT and a TCP proxy that stops forwarding. Its
// tests are the process-level tests of issue 6 (clustering).
//
// The pieces, one file each:
//
//   - cluster.go: Cluster and Node. All ports are picked before the first
//     start (every node must know every voter of controller.quorum.voters)
//     and kept across restarts, as is each node's log dir. A node's stderr
//     goes to a file; when a test fails the tail of every node's log is
//     printed. Nodes die with the test binary (Pdeathsig). The voters
//     are combined broker+controller nodes, or controller-only ones with
//     broker-only nodes beside them (Options.DedicatedControllers and
//     Brokers, Kafka's production layout); AddNode and AddController
//     start observers to be made voters.
//   - proxy.go: a TCP proxy in front of a node's PLAINTEXT listener, which
//     the node advertises (advertised.listeners) so that clients and other
//     brokers reach it only through the proxy. Cut holds every byte in
//     both directions (a network partition, not a reset); Resume lets them
//     through again. The CONTROLLER listener is not proxied, so a cut node
//     still heartbeats and votes: a node cut off from clients and
//     followers, not from the quorum. (Its own outgoing fetches go to the
//     other nodes' proxies, so cutting a follower's proxy does not stop it
//     fetching; SIGSTOP is the way to silence a follower.)
//   - checker.go: Jepsen's queue-checker semantics over Kafka partitions.
//     Every attempted and every acknowledged write is recorded, then every
//     record consumed by a full read from the beginning; Check reports the
//     writes lost (acknowledged, never consumed), duplicated (one value at
//     two offsets), reordered (a producer's values in a partition in an
//     order other than the one it acknowledged them in), misplaced
//     (consumed at another offset than the one acknowledged), unexpected
//     (consumed, never attempted) and inconsistent (one offset read with
//     two values). Writes that failed or timed out may or may not be
//     there; they are only counted.
//   - workload.go: writers (acks=all, idempotent franz-go producers, one
//     value at a time so that acknowledgement order is send order) and
//     the full read that feeds the checker.
//   - wait.go: polling with a deadline for cluster conditions (brokers
//     registered, a partition's leader and ISR as every node sees it, the
//     active controller, the quorum's leader from DescribeQuorum).
//   - raw.go: single requests to one chosen node, among them a raw
//     produce that shows the broker's own error code for a write.
//
// Test timing: replica.lag.time.max.ms, broker.session.timeout.ms and
// broker.heartbeat.interval.ms are set short (see DefaultOverrides) so
// that failures are noticed within seconds; every wait polls a condition
// with a deadline and no test asserts a duration.
//
// The tests, one scenario per file: scenario_leader_test.go (the leader
// killed under writes), scenario_quorum_test.go (two of three down),
// scenario_isr_test.go (a paused follower; the last replica standing),
// scenario_controller_test.go (controller and group coordinator
// failover), scenario_roles_test.go (dedicated controllers and brokers:
// a leading broker and the quorum's leader killed), chaos_test.go (a
// random schedule, on both layouts), config_test.go (the example configs
// in config/cluster). The harness, proxy, checker and workload have tests
// of their own that need no working cluster.
//
// Environment: GREGOR_BINARY runs a prebuilt binary instead of building
// cmd/gregor; GREGOR_CHAOS_DURATION (a Go duration, default 20s) sets how
// long TestChaos runs its random schedule on each layout,
// GREGOR_CHAOS_LAYOUT (combined or dedicated) runs it on one, and
// GREGOR_CHAOS_SEED repeats a logged schedule. A long run:
//
//	GREGOR_CHAOS_DURATION=10m go test -race -count=1 -timeout 60m -run TestChaos ./cmd/gregor/clustertest/
package clustertest
