package compat

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// aclBroker is a gregor with Kafka's StandardAuthorizer: its SASL_PLAINTEXT
// listener has the PLAIN users admin (a super user) and alice (no ACLs to
// start with); its PLAINTEXT listener is for the checks, whose anonymous
// principal is a super user too.
type aclBroker struct {
	addr, plainAddr string
	checks          *kadm.Client // on plainAddr
}

func startACLBroker(t *testing.T) aclBroker {
	t.Helper()
	p := harness.Start(t, t.TempDir(),
		"listeners=SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms=PLAIN",
		`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`,
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:admin;User:ANONYMOUS",
		"group.initial.rebalance.delay.ms=0")
	b := aclBroker{addr: p.Addr, plainAddr: p.ListenerAddr(t, "PLAINTEXT")}
	b.checks = newAdmin(t, b.plainAddr)
	return b
}

// TestFranzGoACLs: kadm, logged in as the super user admin, adds, lists and
// removes ACLs, and franz-go's clients logged in as alice meet them as
// Kafka's errors: without ACLs her producer is refused the topic, with
// WRITE it writes; her group consumer is refused the group until she may
// READ it; a topic without ACLs stays closed; removing WRITE closes
// writing again.
func TestFranzGoACLs(t *testing.T) {
	version := moduleVersion(t, "github.com/twmb/franz-go")
	feature(t, "franz-go", version, "acls", func(t *testing.T) {
		b := startACLBroker(t)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		const topic, closed, group = "franz-acl", "franz-acl-closed", "franz-acl-group"
		createTopic(t, b.checks, topic)
		createTopic(t, b.checks, closed)
		admin := kadm.NewClient(franzClient(t, b.addr, kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())))
		alice := kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())
		recs := makeRecords(topic, 20)
		produce := func(topic string) error {
			cl := franzClient(t, b.addr, alice, kgo.DefaultProduceTopic(topic))
			var rs []*kgo.Record
			for _, kv := range recs {
				rs = append(rs, &kgo.Record{Key: []byte(kv.key), Value: []byte(kv.value)})
			}
			return cl.ProduceSync(ctx, rs...).FirstErr()
		}
		grant := func(acl *kadm.ACLBuilder) {
			t.Helper()
			res, err := admin.CreateACLs(ctx, acl)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				if r.Err != nil {
					t.Fatalf("creating %s %v on %s: %v %s", r.Principal, r.Operation, r.Name, r.Err, r.ErrMessage)
				}
			}
		}

		if err := produce(topic); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("alice produced without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
		write := kadm.NewACLs().Allow("User:alice").Topics(topic).Operations(kadm.OpWrite, kadm.OpDescribe)
		grant(write)
		if err := produce(topic); err != nil {
			t.Fatalf("alice with WRITE: %v", err)
		}
		checkStored(t, b.plainAddr, topic, recs, 2) // snappy, franz-go's default
		if err := produce(closed); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("alice produced to a topic without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}

		grant(kadm.NewACLs().Allow("User:alice").Topics(topic).Operations(kadm.OpRead))
		refused := franzClient(t, b.addr, alice, kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		var groupErr error
		for groupErr == nil && ctx.Err() == nil {
			refused.PollFetches(ctx).EachError(func(_ string, _ int32, err error) { groupErr = err })
		}
		if !errors.Is(groupErr, kerr.GroupAuthorizationFailed) {
			t.Fatalf("alice consuming in a group she may not read: %v, want GROUP_AUTHORIZATION_FAILED", groupErr)
		}
		refused.Close()
		grant(kadm.NewACLs().Allow("User:alice").Groups(group).Operations(kadm.OpRead))
		cl := franzClient(t, b.addr, alice, kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		sameRecords(t, "alice consumed in her group", franzKVs(franzPoll(t, ctx, cl, len(recs))), recs)

		described, err := admin.DescribeACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().AnyResource().
			Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
		if err == nil {
			err = described[0].Err
		}
		if err != nil || len(described) != 1 || len(described[0].Described) != 4 {
			t.Fatalf("alice's ACLs described: %+v, %v; want WRITE, DESCRIBE and READ on %s and READ on %s", described, err, topic, group)
		}
		deleted, err := admin.DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics(topic).Operations(kadm.OpWrite))
		if err != nil || len(deleted) != 1 || deleted[0].Err != nil || len(deleted[0].Deleted) != 1 {
			t.Fatalf("deleting alice's WRITE: %+v, %v", deleted, err)
		}
		// Without WRITE on any topic her idempotent producer gets no
		// producer id (KIP-679), as Kafka answers it.
		if err := produce(topic); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
			t.Fatalf("alice produced after her WRITE was deleted: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
		}
	})
}
