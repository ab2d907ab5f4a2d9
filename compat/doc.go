// Package compat holds tests that drive a freshly started gregor binary
// with real Kafka clients nobody here wrote, installed by the Makefile
// (compat/mk/*.mk: Debian packages, a Python venv, npm, Maven, Go modules)
// and never mocked. See harness for how the binary is started.
//
// Every client family reports into one matrix (matrix_test.go): a Go test
// records each feature it exercised, pass or fail, and `make compat`
// writes the matrix to COMPAT.md. Clients in other languages are programs
// that print `RESULT <feature> ok|fail <message>` lines, which
// script_helpers_test.go records; after each run franz-go reads the
// topics back to check what the broker stored (the codec of each batch,
// producer ids for idempotence), so a client that silently skipped a
// feature fails.
//
// The families, one file or directory each:
//   - Go: franz-go, IBM/sarama, segmentio/kafka-go and confluent-kafka-go
//     (cgo, its bundled librdkafka), also across a SIGKILL of the broker.
//   - librdkafka: kcat, also as `kcat -G` group members killed and
//     restarted; confluent-kafka for Python.
//   - Python: kafka-python (compat/python). JavaScript: kafkajs (compat/js).
//   - Java: kafka-clients 4.x and 3.x with default settings (compat/java),
//     4.x also with the consumer group protocol (group.protocol=consumer),
//     with share groups (KafkaShareConsumer and the Admin client's
//     share-group calls) and with Kafka Streams' own rebalance protocol
//     (group.protocol=streams, streams groups of KIP-1071), and the Spring
//     Boot 4 demo (compat/spring-demo, a @SpringBootTest against the
//     started binary).
//   - Kafka's own command-line tools from Maven Central (compat/tools),
//     including console consumers of the consumer group protocol, console
//     share consumers with kafka-share-groups, kafka-streams-groups on the
//     group of a Kafka Streams application, delegation tokens made,
//     used to log in, renewed and expired with kafka-delegation-tokens, and
//     DumpLogSegments reading segments gregor wrote.
//
// The consumer-group tests (*_group_test.go) also run a mixed group of
// several clients and a broker killed under a running group.
package compat
