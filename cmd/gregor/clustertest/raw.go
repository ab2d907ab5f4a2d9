package clustertest

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// RequestWithin sends one request to node n itself (not to whichever
// broker a client would pick) and waits at most timeout for the answer.
func (n *Node) RequestWithin(req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	return requestAt(n.Addr(), req, timeout)
}

// ControllerRequest sends one request to node n's CONTROLLER listener, as
// a --bootstrap-controller tool does.
func (n *Node) ControllerRequest(req kmsg.Request) (kmsg.Response, error) {
	return requestAt(net.JoinHostPort("127.0.0.1", strconv.Itoa(n.ControllerPort)), req, requestTimeout)
}

func requestAt(addr string, req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	// Produce v13 names topics by id; Produce (below) names them.
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(0, 12)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0),
		kgo.DialTimeout(timeout), kgo.RetryTimeout(timeout), kgo.MaxVersions(versions))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return cl.SeedBrokers()[0].Request(ctx, req)
}

// Request is RequestWithin with a timeout short enough that a paused or
// cut node costs a poll round, not the test.
func (n *Node) Request(req kmsg.Request) (kmsg.Response, error) {
	return n.RequestWithin(req, requestTimeout)
}

// Produce sends node n one non-idempotent record batch holding value, with
// the given acks and the broker-side timeout, and returns the partition's
// error code and the offset it was written at. The answer must come
// within the broker-side timeout plus a margin: a broker that cannot
// satisfy acks answers REQUEST_TIMED_OUT, it does not keep silent.
func (n *Node) Produce(topic string, partition int32, acks int16, timeout time.Duration, value string) (int16, int64, error) {
	batch, err := protocol.AppendBatch(nil, protocol.BatchHeader{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]protocol.Record{{Timestamp: time.Now().UnixMilli(), Value: []byte(value)}})
	if err != nil {
		return 0, 0, err
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks = acks
	req.TimeoutMillis = int32(timeout.Milliseconds())
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := n.RequestWithin(req, timeout+10*time.Second)
	if err != nil {
		return 0, 0, err
	}
	for _, t := range resp.(*kmsg.ProduceResponse).Topics {
		for _, p := range t.Partitions {
			return p.ErrorCode, p.BaseOffset, nil
		}
	}
	return 0, 0, fmt.Errorf("produce response without a partition")
}
