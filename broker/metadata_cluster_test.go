package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// In a cluster too, a Metadata v12+ entry with a topic id and the name ""
// (the Java admin client's describeTopics by id) is asked for by its id,
// as Kafka's handleTopicMetadataRequest does whenever an id is set.
func TestClusterMetadataByIDWithEmptyName(t *testing.T) {
	c := startCluster(t, 1, nil)
	rc := dialRaw(t, c.nodes[0])
	id := createTopicRaw(t, rc, "by-id", 2)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.Topics = []kmsg.MetadataRequestTopic{{TopicID: id, Topic: kmsg.StringPtr("")}}
	mt := rc.request(req).(*kmsg.MetadataResponse).Topics[0]
	if mt.ErrorCode != 0 || ps(mt.Topic) != "by-id" || mt.TopicID != id || len(mt.Partitions) != 2 {
		t.Fatalf("known id: %+v", mt)
	}
	req.Topics = []kmsg.MetadataRequestTopic{{TopicID: [16]byte{9}, Topic: kmsg.StringPtr("")}}
	mt = rc.request(req).(*kmsg.MetadataResponse).Topics[0]
	if mt.ErrorCode != errUnknownTopicID || mt.TopicID != [16]byte{9} || mt.Topic != nil {
		t.Fatalf("unknown id: %+v", mt)
	}
}
