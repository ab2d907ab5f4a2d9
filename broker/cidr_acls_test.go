package broker

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// CIDR hosts in ACLs, with a real client on 127.0.0.1: refused before
// metadata.version 4.4-IV1 (UNSUPPORTED_VERSION); from it an ALLOW for
// 127.0.0.0/8 lets alice write, a DENY for a range she is not in changes
// nothing, and a DENY for 127.0.0.0/24 stops her.
func TestCIDRACLsWithRealClients(t *testing.T) {
	b := startBrokerWith(t, aclProps(t.TempDir()))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	login := func(user string, opts ...kgo.Opt) *kgo.Client {
		return saslClient(t, addr, plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism(), opts...)
	}
	admin := login("admin")
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "net"); err != nil {
		t.Fatal(err)
	}
	allowLoopback := kadm.NewACLs().Allow("User:alice").AllowHosts("127.0.0.0/8").Topics("net").Operations(kadm.OpWrite)
	res, err := adm.CreateACLs(ctxT(t), allowLoopback)
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.UnsupportedVersion) {
		t.Fatalf("a CIDR host at 4.2-IV1: %v %+v", err, res)
	}

	up := kmsg.NewPtrUpdateFeaturesRequest()
	up.SetVersion(1)
	up.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: "metadata.version", MaxVersionLevel: 32, UpgradeType: 1}}
	if resp, err := up.RequestWith(ctxT(t), admin); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("metadata.version to 4.4-IV1: %v %+v", err, resp)
	}
	createACLs(t, adm, allowLoopback)
	alice := login("alice", kgo.DisableIdempotentWrite())
	if err := produceErr(t, alice, "net"); err != nil {
		t.Fatalf("alice from 127.0.0.1 with WRITE for 127.0.0.0/8: %v", err)
	}
	createACLs(t, adm, kadm.NewACLs().Deny("User:alice").DenyHosts("10.0.0.0/8").Topics("net").Operations(kadm.OpWrite))
	if err := produceErr(t, alice, "net"); err != nil {
		t.Fatalf("a DENY for 10.0.0.0/8 stopped alice on 127.0.0.1: %v", err)
	}
	createACLs(t, adm, kadm.NewACLs().Deny("User:alice").DenyHosts("127.0.0.0/24").Topics("net").Operations(kadm.OpWrite))
	if err := produceErr(t, alice, "net"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("a DENY for 127.0.0.0/24 let alice on 127.0.0.1 write: %v", err)
	}
}
