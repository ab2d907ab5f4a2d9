package broker

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Dynamic configs go through the node's config providers as Kafka 4.4's do
// (probed on a 4.4 broker): a string key set to a variable is stored as
// written, described with the provider's value (the variable in its
// synonym) and applied with it; a number key's variable is refused
// INVALID_REQUEST, and a topic's INVALID_CONFIG, the literal text failing
// the key's check.
func TestDynamicConfigsThroughConfigProviders(t *testing.T) {
	secrets := filepath.Join(t.TempDir(), "secrets.properties")
	if err := os.WriteFile(secrets, []byte("prefix=secret-dlq.\nsmall=2000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, map[string]string{"config.providers": "file",
		"config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider"})
	adm := kadm.NewClient(newClient(t, b))
	prefix := "${file:" + secrets + ":prefix}"
	if r := alterBroker(t, adm, kadm.SetConfig, "errors.deadletterqueue.topic.name.prefix", prefix, 1); r.Err != nil {
		t.Fatalf("a string key set to a variable: %v %s", r.Err, r.ErrMessage)
	}
	if got := b.liveConfig().values["errors.deadletterqueue.topic.name.prefix"]; got != "secret-dlq." {
		t.Fatalf("applied prefix %q, want the file's secret-dlq.", got)
	}
	d := describedBroker(t, adm, 1)["errors.deadletterqueue.topic.name.prefix"]
	if d == nil || d.MaybeValue() != "secret-dlq." || len(d.Synonyms) == 0 || d.Synonyms[0].Source != kmsg.ConfigSourceDynamicBrokerConfig || *d.Synonyms[0].Value != prefix {
		t.Fatalf("described as %+v, want the resolved value with the variable as its dynamic synonym", d)
	}

	small := "${file:" + secrets + ":small}"
	r := alterBroker(t, adm, kadm.SetConfig, "message.max.bytes", small, 1)
	if !errors.Is(r.Err, kerr.InvalidRequest) || !strings.HasPrefix(r.ErrMessage, "Invalid value "+small+" for configuration message.max.bytes") {
		t.Fatalf("a number key set to a variable: %v %q, want INVALID_REQUEST", r.Err, r.ErrMessage)
	}
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	resps, err := adm.AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{{Name: "max.message.bytes", Value: kmsg.StringPtr(small)}}, "t")
	if err != nil || len(resps) != 1 || !errors.Is(resps[0].Err, kerr.InvalidConfig) {
		t.Fatalf("a topic's number set to a variable: %v %+v, want INVALID_CONFIG", err, resps)
	}
}
