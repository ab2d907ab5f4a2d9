package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// With delete.topic.enable=false no topic is deleted: every topic of a
// DeleteTopics request is refused, TOPIC_DELETION_DISABLED from v3 and
// INVALID_REQUEST before, as Kafka's controller refuses them; on a single
// node by its own config, in a cluster by the controller's.
func TestDeleteTopicDisabled(t *testing.T) {
	check := func(t *testing.T, adm *kadm.Client, raw *rawConn) {
		if _, err := adm.CreateTopic(ctxT(t), 1, -1, nil, "kept"); err != nil {
			t.Fatal(err)
		}
		res, err := adm.DeleteTopics(ctxT(t), "kept", "never-was")
		if err != nil {
			t.Fatal(err)
		}
		for _, topic := range []string{"kept", "never-was"} {
			if !errors.Is(res[topic].Err, kerr.TopicDeletionDisabled) {
				t.Errorf("deleting %s: %v, want TOPIC_DELETION_DISABLED", topic, res[topic].Err)
			}
		}
		old := kmsg.NewPtrDeleteTopicsRequest()
		old.Version, old.TopicNames, old.TimeoutMillis = 2, []string{"kept"}, 5000
		resp := raw.request(old).(*kmsg.DeleteTopicsResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != errInvalidRequest || *resp.Topics[0].Topic != "kept" {
			t.Errorf("DeleteTopics v2: %+v, want kept refused with INVALID_REQUEST", resp.Topics)
		}
		// Still there (a node may learn of the creation a moment late).
		waitUntil(t, "kept listed after the refused deletions", 10*time.Second, func() bool {
			topics, err := adm.ListTopics(ctxT(t), "kept")
			return err == nil && topics.Has("kept") && topics["kept"].Err == nil
		})
	}
	t.Run("single node", func(t *testing.T) {
		b := startBroker(t, map[string]string{"delete.topic.enable": "false"})
		check(t, newAdmin(t, b), dialRaw(t, b))
	})
	t.Run("cluster", func(t *testing.T) {
		c := startCluster(t, 3, map[string]string{"delete.topic.enable": "false"})
		check(t, kadm.NewClient(c.client()), dialAddr(t, c.addrs()[0]))
	})
}
