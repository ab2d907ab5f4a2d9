package compat

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
)

// The Python clients run from the virtualenv compat/.venv that
// compat/mk/python.mk fills from compat/python/requirements.txt:
// kafka-python (pure Python, codecs from python-snappy/cramjam, lz4 and
// zstandard) and confluent-kafka (librdkafka in the wheel). Each script in
// compat/python runs every feature against its own fresh broker and prints
// RESULT lines (see script_helpers_test.go).

// pythonScript runs one script of compat/python with the venv's Python.
func pythonScript(t *testing.T, script, prefix string) {
	python := venvPython(t)
	p := harness.Start(t, t.TempDir())
	rep := runScript(t, 3*time.Minute, p.Addr, prefix, python, filepath.Join("python", script))
	recordReport(t, rep)
	checkScriptTopics(t, p.Addr, prefix, rep, 200)
	checkScriptTransactions(t, p.Addr, prefix, rep)
}

// TestPythonKafkaPython drives kafka-python: produce, consume, a group of
// two members, commit and resume, KafkaAdminClient, the idempotent
// producer, the four codecs and transactions.
func TestPythonKafkaPython(t *testing.T) {
	pythonScript(t, "kafka_python_compat.py", "kp")
}

// TestPythonKafkaPythonSASL: kafka-python logs in with PLAIN,
// SCRAM-SHA-256 and SCRAM-SHA-512 (compat/python/kafka_python_sasl.py).
func TestPythonKafkaPythonSASL(t *testing.T) {
	python := venvPython(t)
	runSASLScript(t, "py", "kps", python, filepath.Join("python", "kafka_python_sasl.py"))
}

// TestPythonKafkaPythonTLS: kafka-python over SASL_SSL, trusting the
// broker's certificate from PEM (compat/python/kafka_python_tls.py).
func TestPythonKafkaPythonTLS(t *testing.T) {
	python := venvPython(t)
	runTLSScript(t, "py", "kpt", python, filepath.Join("python", "kafka_python_tls.py"))
}

// TestPythonConfluent drives confluent-kafka (librdkafka) through the same
// features, with its AdminClient's topic, partition, cluster, group and
// config operations.
func TestPythonConfluent(t *testing.T) {
	pythonScript(t, "confluent_compat.py", "ck")
}

// TestPythonConfluentSASL: confluent-kafka (librdkafka) logs in with PLAIN,
// SCRAM-SHA-256 and SCRAM-SHA-512 (compat/python/confluent_sasl.py).
func TestPythonConfluentSASL(t *testing.T) {
	python := venvPython(t)
	runSASLScript(t, "ck", "cks", python, filepath.Join("python", "confluent_sasl.py"))
}

// TestPythonConfluentTLS: confluent-kafka over SASL_SSL, trusting the
// broker's certificate from PEM (compat/python/confluent_tls.py).
func TestPythonConfluentTLS(t *testing.T) {
	python := venvPython(t)
	runTLSScript(t, "ck", "ckt", python, filepath.Join("python", "confluent_tls.py"))
}
