package broker

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// reuse is what a connection's Produce and Fetch requests reuse from one
// request to the next, so that the data path allocates nothing per
// request once a client's request shape has been seen: the decoded
// requests (protocol.DecodeRequest fills them in place), the responses
// and the handlers' working slices.
//
// The reader goroutine handles one request at a time and a response is
// encoded into its own buffer before the next request is decoded, so
// nothing here is in use by two requests. Nothing may be kept past the
// request either: fetch sessions copy what they keep, and the topic names
// in a request are strings of their own (never views of the frame).
type reuse struct {
	produce      *kmsg.ProduceRequest
	fetch        *kmsg.FetchRequest
	produceResp  *kmsg.ProduceResponse
	fetchResp    *kmsg.FetchResponse
	waiter       *waiter
	waits        []replicationWait
	appends      []appendJob
	appending    sync.WaitGroup          // a spread produce's shares
	appendFailed atomic.Bool             // one of them panicked
	seen         map[*partition]struct{} // distinct's
	requested    []sessionPartition      // a sessionless fetch's partitions
	requestedAt  []*sessionPartition
	targets      []fetchTarget
	results      []kmsg.FetchResponseTopicPartition
	timer        *time.Timer // a long poll's; stopped between requests
}

// request returns the kept request for key, or a new one for the keys
// that are not kept.
func (r *reuse) request(key int16) kmsg.Request {
	switch key {
	case 0:
		if r.produce == nil {
			r.produce = kmsg.NewPtrProduceRequest()
		}
		return r.produce
	case 1:
		if r.fetch == nil {
			r.fetch = kmsg.NewPtrFetchRequest()
		}
		return r.fetch
	}
	return kmsg.RequestForKey(key)
}

// distinct reports whether no two jobs append to the same partition.
func (r *reuse) distinct(jobs []appendJob) bool {
	if r.seen == nil {
		r.seen = map[*partition]struct{}{}
	}
	clear(r.seen)
	for i := range jobs {
		if _, dup := r.seen[jobs[i].p]; dup {
			return false
		}
		r.seen[jobs[i].p] = struct{}{}
	}
	return true
}

// produceResponse returns the kept Produce response, emptied, for a
// request of req's version.
func (r *reuse) produceResponse(req *kmsg.ProduceRequest) *kmsg.ProduceResponse {
	resp := r.produceResp
	if resp == nil {
		resp = kmsg.NewPtrProduceResponse()
		r.produceResp = resp
	}
	*resp = kmsg.ProduceResponse{Topics: resp.Topics[:0]}
	resp.Default()
	resp.SetVersion(req.Version)
	return resp
}

// addProduceTopic appends a topic to resp, on the array left there by an
// earlier request when there is one.
func addProduceTopic(resp *kmsg.ProduceResponse, topic string, id [16]byte) *kmsg.ProduceResponseTopic {
	n := len(resp.Topics)
	resp.Topics = protocol.Resize(resp.Topics, n+1)
	t := &resp.Topics[n]
	*t = kmsg.ProduceResponseTopic{Topic: topic, TopicID: id, Partitions: t.Partitions[:0]}
	return t
}

// fetchResponse returns the kept Fetch response, emptied, for a request
// of req's version.
func (r *reuse) fetchResponse(req *kmsg.FetchRequest) *kmsg.FetchResponse {
	resp := r.fetchResp
	if resp == nil {
		resp = kmsg.NewPtrFetchResponse()
		r.fetchResp = resp
	}
	*resp = kmsg.FetchResponse{Topics: resp.Topics[:0]}
	resp.Default()
	resp.SetVersion(req.Version)
	return resp
}

// addFetchTopic appends a topic to resp, on the array left there by an
// earlier request when there is one.
func addFetchTopic(resp *kmsg.FetchResponse, topic string, id [16]byte) *kmsg.FetchResponseTopic {
	n := len(resp.Topics)
	resp.Topics = protocol.Resize(resp.Topics, n+1)
	t := &resp.Topics[n]
	*t = kmsg.FetchResponseTopic{Topic: topic, TopicID: id, Partitions: t.Partitions[:0]}
	return t
}

// requestedPartitions lists the partitions a fetch names, on the kept
// arrays: valid until the next fetch (a session copies what it keeps).
func (r *reuse) requestedPartitions(req *kmsg.FetchRequest) []*sessionPartition {
	n := 0
	for _, rt := range req.Topics {
		n += len(rt.Partitions)
	}
	r.requested = protocol.Resize(r.requested, n)
	r.requestedAt = protocol.Resize(r.requestedAt, n)
	i := 0
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			r.requested[i] = sessionPartition{
				key:         sessionKey{topic: rt.Topic, topicID: rt.TopicID, partition: rp.Partition},
				fetchOffset: rp.FetchOffset, maxBytes: rp.PartitionMaxBytes, currentLeaderEpoch: rp.CurrentLeaderEpoch, lastFetchedEpoch: rp.LastFetchedEpoch,
				logStartOffset: rp.LogStartOffset, sentHighWatermark: -1, sentLogStart: -1,
			}
			r.requestedAt[i] = &r.requested[i]
			i++
		}
	}
	return r.requestedAt
}

// startTimer returns the connection's timer, started for d.
func (r *reuse) startTimer(d time.Duration) *time.Timer {
	if r.timer == nil {
		r.timer = time.NewTimer(d)
	} else {
		r.timer.Reset(d)
	}
	return r.timer
}

// parkWaiter returns the connection's waiter, with no wake-up pending.
func (r *reuse) parkWaiter() *waiter {
	if r.waiter == nil {
		r.waiter = newWaiter()
	}
	select {
	case <-r.waiter.ch:
	default:
	}
	return r.waiter
}

// release drops what the kept requests and responses point into once a
// response is encoded: the request frame (which may be a large pooled
// buffer) and fetched records, so that an idle connection holds none.
func (r *reuse) release(key int16) {
	switch key {
	case 0:
		clear(r.waits)
		for i := range r.produce.Topics {
			for j := range r.produce.Topics[i].Partitions {
				r.produce.Topics[i].Partitions[j].Records = nil
			}
		}
	case 1:
		if r.fetchResp != nil {
			for i := range r.fetchResp.Topics {
				clear(r.fetchResp.Topics[i].Partitions)
			}
		}
		clear(r.results)
		clear(r.targets)
	}
}
