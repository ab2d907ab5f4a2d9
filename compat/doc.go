// Package compat holds tests that drive a freshly started gregor binary
// with real Kafka clients nobody here wrote, installed by the Makefile and
// never mocked. See harness for how the binary is started.
package compat
