package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The Java client's describeTopics(TopicCollection.ofTopicIds(...)) sends
// Metadata v12+ entries with a topic id and the name left at "", its
// default; the id must decide, as in Kafka, and the answer carry both.
func TestMetadataByIDWithEmptyName(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	id := createTopicRaw(t, rc, "by-id", 2)
	for _, v := range []int16{12, 13} {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(v)
		req.Topics = []kmsg.MetadataRequestTopic{{TopicID: id, Topic: kmsg.StringPtr("")}}
		resp := rc.request(req).(*kmsg.MetadataResponse)
		if len(resp.Topics) != 1 {
			t.Fatalf("v%d: %d topics", v, len(resp.Topics))
		}
		mt := resp.Topics[0]
		if mt.ErrorCode != 0 || mt.Topic == nil || *mt.Topic != "by-id" || mt.TopicID != id || len(mt.Partitions) != 2 {
			t.Fatalf("v%d: %+v", v, mt)
		}
		req.Topics = []kmsg.MetadataRequestTopic{{TopicID: [16]byte{9}, Topic: kmsg.StringPtr("")}}
		mt = rc.request(req).(*kmsg.MetadataResponse).Topics[0]
		if mt.ErrorCode != errUnknownTopicID || mt.TopicID != [16]byte{9} {
			t.Fatalf("v%d unknown id: error %d, id %x", v, mt.ErrorCode, mt.TopicID)
		}
	}
}
