package compat

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
)

// TestJSKafkajs drives kafkajs (compat/js/kafkajs_compat.js, installed by
// compat/mk/js.mk with `npm ci`): produce, consume, a group of two
// members, commit and resume, the admin client's topic, partition,
// config, cluster, group and offset operations, the idempotent producer,
// the four codecs and transactions, against a fresh broker. Results are the
// script's RESULT lines (see script_helpers_test.go).
func TestJSKafkajs(t *testing.T) {
	node := kafkajsNode(t)
	t.Setenv("KAFKAJS_NO_PARTITIONER_WARNING", "1")
	p := harness.Start(t, t.TempDir())
	rep := runScript(t, 3*time.Minute, p.Addr, "js", node, filepath.Join("js", "kafkajs_compat.js"))
	recordReport(t, rep)
	checkScriptTopics(t, p.Addr, "js", rep, 200)
	checkScriptTransactions(t, p.Addr, "js", rep)
}

// TestJSKafkajsSASL: kafkajs logs in with PLAIN, SCRAM-SHA-256 and
// SCRAM-SHA-512 (compat/js/kafkajs_sasl.js).
func TestJSKafkajsSASL(t *testing.T) {
	node := kafkajsNode(t)
	runSASLScript(t, "js", "jss", node, filepath.Join("js", "kafkajs_sasl.js"))
}

// TestJSKafkajsTLS: kafkajs over SASL_SSL, trusting the broker's
// certificate from PEM (compat/js/kafkajs_tls.js).
func TestJSKafkajsTLS(t *testing.T) {
	node := kafkajsNode(t)
	runTLSScript(t, "js", "jst", node, filepath.Join("js", "kafkajs_tls.js"))
}
