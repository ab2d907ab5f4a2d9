package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/coordinator/share"
	"github.com/gregor-broker/gregor/internal/features"
	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareDLQ writes share groups' dead-letter queues (KIP-1191, share.version
// 2), as Kafka 4.4's DefaultShareGroupDLQManager does. A group has one when
// its errors.deadletterqueue.topic.name is set; then a record a member
// rejects, or one released at the delivery limit, goes Archiving
// (coordinator/share) and is persisted so; the share-partition's leader
// hands the Archiving records here, which writes one record per offset to
// the queue, and then archives them, whether the write succeeded or not
// (Kafka's "proceeding to ARCHIVED regardless"). A new leader sends the
// records it reads back Archiving again, so the queue may hold one twice,
// as in Kafka.
//
// The queue's record has no key or value (the original record's key and
// value with errors.deadletterqueue.copy.record.enable, never its headers),
// the broker's time as its timestamp, and Kafka's __dlq.errors.* headers
// naming the source topic, partition, offset, group, delivery count and
// cause. It goes to partition (source partition % the queue's partition
// count), with acks=all and no compression, through a client of this
// broker's inter-broker listener, which finds the partition's leader and
// retries as Kafka's sender does. The topic must be named outside "__",
// with errors.deadletterqueue.topic.name.prefix ("dlq."), and opt in with
// errors.deadletterqueue.group.enable=true; a missing one is created
// (errors.deadletterqueue.auto.create.topics.enable) with that config and
// the broker's default partitions and replication factor.
type shareDLQ struct {
	b      *Broker
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	client *kgo.Client
	closed bool
}

// dlqProduceTimeout bounds one queue write, retries included (Kafka's
// sender gives up after 5 tries backing off up to 30 s).
const dlqProduceTimeout = 30 * time.Second

func newShareDLQ(b *Broker) *shareDLQ {
	ctx, cancel := context.WithCancel(context.Background())
	return &shareDLQ{b: b, ctx: ctx, cancel: cancel}
}

// shareDLQEnabled reports whether a group's share-partitions archive through a
// dead-letter queue: share.version 2 and a queue topic named.
func (b *Broker) shareDLQEnabled(settings shareGroupSettings) bool {
	if settings.dlqTopic == "" {
		return false
	}
	stored, _ := b.featureLevels()
	return features.Level(stored, features.ShareVersion) >= 2
}

// archive writes runs of sp's state st to the group's queue, then archives
// them in st if it is still sp's state; sp.mu is held by the caller, not
// by the write.
func (d *shareDLQ) archive(sp *sharePartition, st *share.Partition, runs []share.ToArchive) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := d.write(sp, runs); err != nil {
			if d.ctx.Err() != nil {
				return // stopping: the records stay Archiving for the next leader
			}
			d.b.logger.Error("Failed to write to DLQ, proceeding to ARCHIVED regardless.", "group", sp.key.group,
				"topic", sp.part.topic.name, "partition", sp.part.index, "err", err)
		}
		sp.mu.Lock()
		defer sp.mu.Unlock()
		sp.archiving = false
		if sp.state == st && !sp.dropped && st.FinishArchiving(runs) {
			d.b.shares.write(sp) // and what went Archiving meanwhile
			sp.part.wake()
			return
		}
		d.b.shares.archive(sp) // a reloaded state's own
	}()
}

// stop refuses new writes and cancels those in flight, whose records stay
// Archiving.
func (d *shareDLQ) stop() {
	d.mu.Lock()
	d.closed = true
	d.cancel()
	d.mu.Unlock()
}

func (d *shareDLQ) close() {
	d.stop()
	d.wg.Wait()
	d.mu.Lock()
	client := d.client
	d.mu.Unlock()
	if client != nil {
		client.Close()
	}
}

// write produces one queue record per offset of runs.
func (d *shareDLQ) write(sp *sharePartition, runs []share.ToArchive) error {
	b := d.b
	group, source := sp.key.group, sp.part.topic.name
	settings := b.shareGroupSettings(group)
	live := b.liveConfig()
	topic := settings.dlqTopic
	exists := b.topicExists(topic)
	switch {
	case topic == "":
		return fmt.Errorf("Configured DLQ topic name in share group: %s is empty.", group)
	case strings.HasPrefix(topic, "__"):
		return fmt.Errorf("Configured DLQ topic name in share group: %s cannot start with __, topic: %s.", group, topic)
	case exists && b.topicOverrides(topic)["errors.deadletterqueue.group.enable"] != "true":
		return fmt.Errorf("DLQ is not enabled on configured DLQ topic for share group: %s, topic: %s.", group, topic)
	case !exists && !live.ShareDLQAutoCreate:
		return fmt.Errorf("DLQ topic does not exist and auto create is disabled on cluster for share group: %s, topic: %s.", group, topic)
	case live.ShareDLQTopicPrefix != "" && !strings.HasPrefix(topic, live.ShareDLQTopicPrefix):
		return fmt.Errorf("Configured DLQ topic name does not comply with the DLQ topic prefix in share group: %s, topic: %s, prefix: %s.", group, topic, live.ShareDLQTopicPrefix)
	}
	client, err := d.producer()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(d.ctx, dlqProduceTimeout)
	defer cancel()
	if !exists {
		if err := createDLQTopic(ctx, client, topic); err != nil {
			return fmt.Errorf("Unable to create DLQ topic for %s using DLQ topic %s: %w", group, topic, err)
		}
	}
	partitions, err := dlqPartitionCount(ctx, client, topic)
	if err != nil {
		return err
	}
	var originals map[int64]*protocol.Record
	if settings.dlqCopyRecord {
		originals = d.originals(sp, runs)
	}
	now := time.Now()
	var recs []*kgo.Record
	for _, run := range runs {
		for o := run.FirstOffset; o <= run.LastOffset; o++ {
			r := &kgo.Record{Topic: topic, Partition: sp.part.index % partitions, Timestamp: now, Headers: []kgo.RecordHeader{
				{Key: "__dlq.errors.topic", Value: []byte(source)},
				{Key: "__dlq.errors.partition", Value: []byte(strconv.Itoa(int(sp.part.index)))},
				{Key: "__dlq.errors.offset", Value: []byte(strconv.FormatInt(o, 10))},
				{Key: "__dlq.errors.group", Value: []byte(group)},
				{Key: "__dlq.errors.delivery.count", Value: []byte(strconv.Itoa(int(run.DeliveryCount)))},
				{Key: "__dlq.errors.message", Value: []byte(run.Cause.String())},
			}}
			if orig := originals[o]; orig != nil {
				r.Key, r.Value = orig.Key, orig.Value
			}
			recs = append(recs, r)
		}
	}
	return client.ProduceSync(ctx, recs...).FirstErr()
}

// producer is the client the queues are written with, made on first use.
func (d *shareDLQ) producer() (*kgo.Client, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.client != nil {
		return d.client, nil
	}
	b := d.b
	addr := b.interBrokerBound().ln.Addr().(*net.TCPAddr)
	opts := append(b.interBrokerClientOpts(addr.String(), "gregor-share-dlq-"+strconv.Itoa(int(b.cfg.NodeID)), -1),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(0))
	client, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	d.client = client
	return client, nil
}

// originals are the records of runs in the partition's log, by offset, for
// a queue that copies them; an offset that cannot be read gets a record of
// headers only, as in Kafka.
func (d *shareDLQ) originals(sp *sharePartition, runs []share.ToArchive) map[int64]*protocol.Record {
	out := map[int64]*protocol.Record{}
	l := sp.part.log
	maxBytes := int(sp.part.topic.settings.Load().maxMessageBytes)
	for _, run := range runs {
		for from := run.FirstOffset; from <= run.LastOffset; {
			read, err := l.Read(from, maxBytes, l.HighWatermark())
			if err != nil || len(read.Records) == 0 {
				d.b.logger.Warn("Unable to fetch original record data for the DLQ; its records are produced with headers only",
					"group", sp.key.group, "topic", sp.part.topic.name, "partition", sp.part.index, "offset", from, "err", err)
				break
			}
			next := from
			protocol.DataRecords(read.Records, func(r *protocol.Record) error {
				if r.Offset >= from && r.Offset <= run.LastOffset {
					out[r.Offset] = &protocol.Record{Offset: r.Offset, Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value)}
				}
				next = max(next, r.Offset+1)
				return nil
			})
			protocol.EachBatch(read.Records, func(h protocol.BatchHeader, _ []byte) error {
				next = max(next, h.LastOffset()+1) // past control batches and compacted gaps too
				return nil
			})
			if next == from {
				break
			}
			from = next
		}
	}
	return out
}

// createDLQTopic creates a queue topic as Kafka's DLQ manager does: the
// broker's default partitions and replication factor, opted in as a queue,
// with CreateTime timestamps. One that exists by now is fine.
func createDLQTopic(ctx context.Context, client *kgo.Client, topic string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, -1, -1
	for k, v := range map[string]string{"errors.deadletterqueue.group.enable": "true", "message.timestamp.type": "CreateTime"} {
		t.Configs = append(t.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: k, Value: kmsg.StringPtr(v)})
	}
	req.Topics = append(req.Topics, t)
	req.TimeoutMillis = int32(dlqProduceTimeout.Milliseconds())
	resp, err := req.RequestWith(ctx, client)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return err
	}
	return nil
}

// dlqPartitionCount is the queue topic's number of partitions.
func dlqPartitionCount(ctx context.Context, client *kgo.Client, topic string) (int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
	req.AllowAutoTopicCreation = false
	for {
		// A topic just created may take a moment to reach every broker.
		resp, err := req.RequestWith(ctx, client)
		if err != nil {
			return 0, err
		}
		if len(resp.Topics) == 1 && resp.Topics[0].ErrorCode == 0 && len(resp.Topics[0].Partitions) > 0 {
			return int32(len(resp.Topics[0].Partitions)), nil
		}
		err = fmt.Errorf("no metadata for DLQ topic %s", topic)
		if len(resp.Topics) == 1 && resp.Topics[0].ErrorCode != 0 {
			err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
		}
		select {
		case <-ctx.Done():
			return 0, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
