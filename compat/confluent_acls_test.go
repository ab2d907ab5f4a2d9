package compat

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// TestConfluentACLs: librdkafka's AdminClient, in confluent-kafka-go and
// logged in as the super user admin, creates, describes and deletes ACLs,
// and alice's producer and group consumer meet them as Kafka's errors:
// TOPIC_AUTHORIZATION_FAILED without WRITE, GROUP_AUTHORIZATION_FAILED
// until she may READ the group.
func TestConfluentACLs(t *testing.T) {
	feature(t, confluentClientName, confluentVersion(t), "acls", func(t *testing.T) {
		b := startACLBroker(t)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		const topic, group = "confluent-acl", "confluent-acl-group"
		createTopic(t, b.checks, topic)
		admin, err := kafka.NewAdminClient(confluentConfig(t, b.addr, confluentLogin("SASL_PLAINTEXT", "PLAIN", "admin", "admin-secret")...))
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		alice := confluentLogin("SASL_PLAINTEXT", "PLAIN", "alice", "alice-secret")
		allow := func(typ kafka.ResourceType, name string, op kafka.ACLOperation) kafka.ACLBinding {
			return kafka.ACLBinding{Type: typ, Name: name, ResourcePatternType: kafka.ResourcePatternTypeLiteral, Principal: "User:alice",
				Host: "*", Operation: op, PermissionType: kafka.ACLPermissionTypeAllow}
		}
		grant := func(acls ...kafka.ACLBinding) {
			t.Helper()
			res, err := admin.CreateACLs(ctx, acls)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range res {
				if r.Error.Code() != kafka.ErrNoError {
					t.Fatalf("creating %+v: %v", acls[i], r.Error)
				}
			}
		}
		refusedWith := func(err error, code kafka.ErrorCode) bool {
			var kerr kafka.Error
			return errors.As(err, &kerr) && kerr.Code() == code
		}
		recs := makeRecords(topic, 20)

		if err := confluentDeliver(t, b.addr, topic, recs, alice...); !refusedWith(err, kafka.ErrTopicAuthorizationFailed) {
			t.Fatalf("alice produced without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
		grant(allow(kafka.ResourceTopic, topic, kafka.ACLOperationWrite), allow(kafka.ResourceTopic, topic, kafka.ACLOperationRead))
		if err := confluentDeliver(t, b.addr, topic, recs, alice...); err != nil {
			t.Fatalf("alice with WRITE: %v", err)
		}
		checkStored(t, b.plainAddr, topic, recs, 0)

		readGroup := func() ([]keyValue, error) {
			c, err := kafka.NewConsumer(confluentConfig(t, b.addr, append([]string{"group.id=" + group, "auto.offset.reset=earliest",
				"fetch.wait.max.ms=100"}, alice...)...))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.Subscribe(topic, nil); err != nil {
				t.Fatal(err)
			}
			var got []keyValue
			for len(got) < len(recs) && ctx.Err() == nil {
				m, err := c.ReadMessage(100 * time.Millisecond)
				var kerr kafka.Error
				switch {
				case errors.As(err, &kerr) && kerr.IsTimeout():
				case err != nil:
					return got, err
				default:
					got = append(got, keyValue{string(m.Key), string(m.Value)})
				}
			}
			return got, ctx.Err()
		}
		if _, err := readGroup(); !refusedWith(err, kafka.ErrGroupAuthorizationFailed) {
			t.Fatalf("alice consuming in a group she may not read: %v, want GROUP_AUTHORIZATION_FAILED", err)
		}
		grant(allow(kafka.ResourceGroup, group, kafka.ACLOperationRead))
		got, err := readGroup()
		if err != nil {
			t.Fatalf("alice consuming in her group: %v", err)
		}
		sameRecords(t, "alice consumed in her group", got, recs)

		filter := kafka.ACLBindingFilter{Type: kafka.ResourceAny, ResourcePatternType: kafka.ResourcePatternTypeAny,
			Principal: "User:alice", Operation: kafka.ACLOperationAny, PermissionType: kafka.ACLPermissionTypeAny}
		described, err := admin.DescribeACLs(ctx, filter)
		if err != nil || described.Error.Code() != kafka.ErrNoError || len(described.ACLBindings) != 3 {
			t.Fatalf("alice's ACLs described: %+v, %v; want WRITE and READ on %s and READ on %s", described, err, topic, group)
		}
		write := allow(kafka.ResourceTopic, topic, kafka.ACLOperationWrite)
		deleted, err := admin.DeleteACLs(ctx, kafka.ACLBindingFilters{write})
		if err != nil || len(deleted) != 1 || deleted[0].Error.Code() != kafka.ErrNoError || len(deleted[0].ACLBindings) != 1 {
			t.Fatalf("deleting alice's WRITE: %+v, %v", deleted, err)
		}
		if err := confluentDeliver(t, b.addr, topic, recs, alice...); !refusedWith(err, kafka.ErrTopicAuthorizationFailed) {
			t.Fatalf("alice produced after her WRITE was deleted: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
	})
}
