package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// A node started with Kafka's config providers takes its SASL passwords
// from a properties file and the environment and a topic default from a
// file in a directory, as Kafka does (KIP-421): the users log in with the
// secrets, not with the variables written in the configuration, and no
// provider key is warned of as unknown. A provider class Gregor does not
// have stops the start, naming it.
func TestServeResolvesConfigProviders(t *testing.T) {
	root := t.TempDir()
	secrets := filepath.Join(root, "secrets.properties")
	if err := os.WriteFile(secrets, []byte("admin.password=admin-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "conf"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "conf", "retention"), []byte("3600000"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GREGOR_TEST_ALICE_PASSWORD", "alice-secret")
	adminPassword := "${file:" + secrets + ":admin.password}"
	p := harness.Start(t, t.TempDir(),
		"listeners=SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms=PLAIN",
		"security.inter.broker.protocol=SASL_PLAINTEXT",
		"sasl.mechanism.inter.broker.protocol=PLAIN",
		"config.providers=file,dir,env",
		"config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider",
		"config.providers.file.param.allowed.paths="+root,
		"config.providers.dir.class=org.apache.kafka.common.config.provider.DirectoryConfigProvider",
		"config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider",
		"config.providers.env.param.allowlist.pattern=GREGOR_TEST_.*",
		`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required `+
			`username="admin" password="`+adminPassword+`" user_admin="`+adminPassword+`" user_alice="${env:GREGOR_TEST_ALICE_PASSWORD}";`,
		"log.retention.ms=${dir:"+filepath.Join(root, "conf")+":retention}")

	login := func(user, pass string, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(p.Addr), kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()),
			kgo.RetryTimeout(5 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	alice := login("alice", "alice-secret", kgo.DefaultProduceTopic("secrets"), kgo.AllowAutoTopicCreation())
	if err := alice.ProduceSync(t.Context(), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("alice with the password from the environment: %v", err)
	}
	literal := login("alice", "${env:GREGOR_TEST_ALICE_PASSWORD}")
	if err := literal.Ping(t.Context()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("alice with the variable as her password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	adm := kadm.NewClient(login("admin", "admin-secret"))
	rcs, err := adm.DescribeBrokerConfigs(t.Context(), 1)
	if err != nil || len(rcs) != 1 {
		t.Fatalf("describe broker: %v %v", rcs, err)
	}
	retention := "(not described)"
	for _, c := range rcs[0].Configs {
		if c.Key == "log.retention.ms" {
			retention = c.MaybeValue()
		}
	}
	if retention != "3600000" {
		t.Fatalf("log.retention.ms described as %q, want the directory file's 3600000", retention)
	}
	logs, err := os.ReadFile(p.Logs)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(logs), "config key config.providers") {
		t.Fatalf("a provider key was warned of:\n%s", logs)
	}

	bin, err := harness.Binary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "serve", "--override", "log.dirs="+t.TempDir(), "--override", "config.providers=vault",
		"--override", "config.providers.vault.class=com.example.VaultConfigProvider").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Invalid value com.example.VaultConfigProvider for configuration config.providers.vault.class") {
		t.Fatalf("a provider Gregor does not have: err %v, output %s", err, out)
	}
}
