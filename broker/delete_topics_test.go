package broker

import (
	"errors"
	"slices"
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

// Malformed DeleteTopics entries are refused with INVALID_REQUEST and
// Kafka's messages (ControllerApis.deleteTopics), and nothing they name is
// deleted: a name given twice, an id given twice (one answer each), a
// name and an id in one entry, neither, and a name whose id the request
// also gives (Kafka answers only the name).
func TestDeleteTopicsMalformedEntries(t *testing.T) {
	onBothLayouts(t, checkMalformedDeletions)
}

func checkMalformedDeletions(t *testing.T, b *Broker, rc *rawConn) {
	ids := map[string][16]byte{}
	for _, name := range []string{"twice", "byid", "both", "mapped"} {
		ids[name] = createTopicRaw(t, rc, name, 1)
	}
	name := kmsg.StringPtr
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.SetVersion(6)
	req.Topics = []kmsg.DeleteTopicsRequestTopic{
		{Topic: name("twice")}, {Topic: name("twice")},
		{TopicID: ids["byid"]}, {TopicID: ids["byid"]},
		{Topic: name("both"), TopicID: ids["both"]},
		{},
		{Topic: name("mapped")}, {TopicID: ids["mapped"]},
	}
	type answer struct {
		name string
		id   [16]byte
		code int16
		msg  string
	}
	var got []answer
	for _, st := range rc.request(req).(*kmsg.DeleteTopicsResponse).Topics {
		got = append(got, answer{ps(st.Topic), st.TopicID, st.ErrorCode, ps(st.ErrorMessage)})
	}
	want := []answer{
		{"twice", [16]byte{}, errInvalidRequest, "Duplicate topic name."},
		{"", ids["byid"], errInvalidRequest, "Duplicate topic id."},
		{"both", ids["both"], errInvalidRequest, "You may not specify both topic name and topic id."},
		{"", [16]byte{}, errInvalidRequest, "Neither topic name nor id were specified."},
		{"mapped", ids["mapped"], errInvalidRequest, "The provided topic name maps to an ID that was already supplied."},
	}
	if len(got) != len(want) {
		t.Errorf("answers %+v, want %+v", got, want)
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("no answer %+v in %+v", w, got)
		}
	}
	for name := range ids {
		if !b.topicExists(name) {
			t.Errorf("%s was deleted", name)
		}
	}
	// Before v6, by name only.
	old := kmsg.NewPtrDeleteTopicsRequest()
	old.SetVersion(5)
	old.TopicNames = []string{"twice", "twice"}
	resp := rc.request(old).(*kmsg.DeleteTopicsResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != errInvalidRequest || ps(resp.Topics[0].ErrorMessage) != "Duplicate topic name." || !b.topicExists("twice") {
		t.Errorf("v5 duplicate: %+v", resp.Topics)
	}
}
