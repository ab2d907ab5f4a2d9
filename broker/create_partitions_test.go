package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCreatePartitionsNotAnIncrease pins Kafka 4's INVALID_PARTITIONS
// answers for a count equal to or below the current one, which clients
// (sarama, kafka-topics) show to users verbatim.
func TestCreatePartitionsNotAnIncrease(t *testing.T) {
	_, rc := startWithTopic(t, "grow")
	for _, c := range []struct {
		count int32
		msg   string
	}{
		{1, "Topic already has 1 partition(s)."},
		{0, "The topic grow currently has 1 partition(s); 0 would not be an increase."},
	} {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "grow", Count: c.count}}
		resp := rc.request(req).(*kmsg.CreatePartitionsResponse)
		got := resp.Topics[0]
		if got.ErrorCode != errInvalidPartitions || got.ErrorMessage == nil || *got.ErrorMessage != c.msg {
			t.Errorf("count %d: error %d %v, want %d %q", c.count, got.ErrorCode, got.ErrorMessage, errInvalidPartitions, c.msg)
		}
	}
}
