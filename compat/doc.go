// Package compat holds tests that drive a freshly started gregor binary
// with real Kafka clients nobody here wrote, installed by the Makefile and
// never mocked. See harness for how the binary is started.
//
// The consumer-group tests (*_group_test.go) run IBM/sarama ConsumerGroups,
// segmentio/kafka-go Readers and `kcat -G` processes (librdkafka) against
// the coordinator, including members killed with SIGKILL, static members
// restarted and a broker killed under a running group; franz-go (kgo,
// kadm) sets up topics and checks the broker's view of each group.
package compat
