// Package broker is Gregor's server: listeners and connections, one handler
// file per Kafka API key (named NN_api.go after the key), the topics and
// partitions this node leads, parked fetches and fetch sessions, and the
// broker configuration.
//
// Request path: a connection's reader goroutine reads a frame, looks the
// API key up in the handler registry (registry.go, the single source of
// the ApiVersions response), decodes the body with kmsg, runs the handler
// and queues the encoded response for the connection's writer goroutine.
// Requests of one connection are handled one at a time, so responses keep
// request order. Kafka errors travel in response error codes; a request
// outside the registry or one that does not decode closes the connection.
//
// State and locks: the topic registry (topics.go) owns the topics behind
// an RWMutex; a partition owns its log (the log serialises appends
// itself) and a set of parked fetches guarded by waitMu. Lock order:
// registry mu, then a fetch session's mu, then a partition's waitMu.
// Waiting is event driven: a long-poll fetch registers a waiter on each
// partition it reads and sleeps until an append wakes it or max.wait.ms
// passes; there is no polling loop.
//
// Storage is package logstore; framing, headers and record batches are
// package protocol.
package broker
