package protocol

// Decoding the two requests of the data path without allocating.
//
// kmsg's ReadFrom makes every array and string of a request afresh. A
// connection that keeps one Produce and one Fetch request and decodes each
// new one into it (DecodeProduceRequest, DecodeFetchRequest) gets the
// arrays reused at every level, and a topic name kept when the bytes equal
// the name already in that slot, so once a client's request shape has
// been seen, decoding allocates nothing. Records alias the frame, as with
// kmsg. What comes out equals kmsg's ReadFrom of the same bytes field by
// field (reuse_test.go checks every served version, FuzzDecodeReuse random
// bytes), except that an empty array may be non-nil; malformed input fails
// with the same kbin.ErrNotEnoughData.

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DecodeRequest decodes body into req, reusing req's arrays for Produce
// and Fetch and going through kmsg for every other request.
func DecodeRequest(req kmsg.Request, body []byte) error {
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		return DecodeProduceRequest(r, body)
	case *kmsg.FetchRequest:
		return DecodeFetchRequest(r, body)
	}
	return req.ReadFrom(body)
}

// DecodeProduceRequest decodes a Produce request of v.Version into v.
func DecodeProduceRequest(v *kmsg.ProduceRequest, src []byte) error {
	d := decoder{Reader: kbin.Reader{Src: src}, flexible: v.Version >= 9}
	version := v.Version
	topics, transactionID := v.Topics, v.TransactionID
	*v = kmsg.ProduceRequest{Version: version, TimeoutMillis: 15000}
	if version >= 3 {
		v.TransactionID = d.nullableString(transactionID)
	}
	v.Acks = d.Int16()
	v.TimeoutMillis = d.Int32()
	v.Topics = Resize(topics, d.arrayLen(topicMinSize(version)))
	for i := range v.Topics {
		t := &v.Topics[i]
		name, partitions := t.Topic, t.Partitions
		*t = kmsg.ProduceRequestTopic{}
		t.Topic, t.TopicID = d.topic(version, name)
		t.Partitions = Resize(partitions, d.arrayLen(6))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			*p = kmsg.ProduceRequestTopicPartition{Partition: d.Int32(), Records: d.nullableBytes()}
			d.tags(&p.UnknownTags)
		}
		d.tags(&t.UnknownTags)
	}
	d.tags(&v.UnknownTags)
	return d.Complete()
}

// DecodeFetchRequest decodes a Fetch request of v.Version into v.
func DecodeFetchRequest(v *kmsg.FetchRequest, src []byte) error {
	d := decoder{Reader: kbin.Reader{Src: src}, flexible: v.Version >= 12}
	version := v.Version
	topics, forgotten, rack, clusterID := v.Topics, v.ForgottenTopics, v.Rack, v.ClusterID
	*v = kmsg.FetchRequest{Version: version}
	v.Default()
	if version <= 14 {
		v.ReplicaID = d.Int32()
	}
	v.MaxWaitMillis = d.Int32()
	v.MinBytes = d.Int32()
	if version >= 3 {
		v.MaxBytes = d.Int32()
	}
	if version >= 4 {
		v.IsolationLevel = d.Int8()
	}
	if version >= 7 {
		v.SessionID = d.Int32()
		v.SessionEpoch = d.Int32()
	}
	v.Topics = Resize(topics, d.arrayLen(topicMinSize(version)))
	for i := range v.Topics {
		t := &v.Topics[i]
		name, partitions := t.Topic, t.Partitions
		*t = kmsg.FetchRequestTopic{}
		t.Topic, t.TopicID = d.topic(version, name)
		minSize := int64(16)
		if version >= 12 {
			minSize = 32
		}
		t.Partitions = Resize(partitions, d.arrayLen(minSize))
		for j := range t.Partitions {
			decodeFetchPartition(&d, version, &t.Partitions[j])
		}
		d.tags(&t.UnknownTags)
	}
	if version >= 7 {
		v.ForgottenTopics = Resize(forgotten, d.arrayLen(topicMinSize(version)))
		for i := range v.ForgottenTopics {
			t := &v.ForgottenTopics[i]
			name, partitions := t.Topic, t.Partitions
			*t = kmsg.FetchRequestForgottenTopic{}
			t.Topic, t.TopicID = d.topic(version, name)
			t.Partitions = Resize(partitions, d.arrayLen(4))
			for j := range t.Partitions {
				t.Partitions[j] = d.Int32()
			}
			d.tags(&t.UnknownTags)
		}
	}
	if version >= 11 {
		v.Rack = d.name(rack)
	}
	if d.flexible {
		for k := d.Uvarint(); k > 0 && d.Ok(); k-- {
			key := d.Uvarint()
			field := decoder{Reader: kbin.Reader{Src: d.Span(int(d.Uvarint()))}, flexible: true}
			switch key {
			case 0:
				v.ClusterID = field.nullableString(clusterID)
			case 1:
				v.ReplicaState.ID = field.Int32()
				v.ReplicaState.Epoch = field.Int64()
				field.tags(&v.ReplicaState.UnknownTags)
			default:
				v.UnknownTags.Set(key, field.Src)
				continue
			}
			if err := field.Complete(); err != nil {
				return err
			}
		}
	}
	return d.Complete()
}

func decodeFetchPartition(d *decoder, version int16, p *kmsg.FetchRequestTopicPartition) {
	*p = kmsg.FetchRequestTopicPartition{}
	p.Default()
	p.Partition = d.Int32()
	if version >= 9 {
		p.CurrentLeaderEpoch = d.Int32()
	}
	p.FetchOffset = d.Int64()
	if version >= 12 {
		p.LastFetchedEpoch = d.Int32()
	}
	if version >= 5 {
		p.LogStartOffset = d.Int64()
	}
	p.PartitionMaxBytes = d.Int32()
	if !d.flexible {
		return
	}
	for k := d.Uvarint(); k > 0 && d.Ok(); k-- {
		key := d.Uvarint()
		field := kbin.Reader{Src: d.Span(int(d.Uvarint()))}
		switch key {
		case 0:
			p.ReplicaDirectoryID = field.Uuid()
		case 1:
			p.HighWatermark = field.Int64()
		default:
			p.UnknownTags.Set(key, field.Src)
			continue
		}
		if !field.Ok() {
			d.Span(-1) // fails the decoding, as kmsg does
			return
		}
	}
}

// topicMinSize is the least size of a topic entry of Produce and Fetch:
// a name's length, or a topic id and more from v13.
func topicMinSize(version int16) int64 {
	if version >= 13 {
		return 18
	}
	return 2
}

// decoder reads Kafka's primitive types in the flexible (compact) or the
// classic encoding.
type decoder struct {
	kbin.Reader
	flexible bool
}

// arrayLen reads an array length and fails the decoding when the bytes
// left cannot hold that many elements of at least minSize bytes (a length
// read from the wire never sizes an allocation by itself). A null array
// reads as empty.
func (d *decoder) arrayLen(minSize int64) int {
	var n int32
	if d.flexible {
		n = d.CompactArrayLen()
	} else {
		n = d.ArrayLen()
	}
	if !d.Ok() || int64(n)*minSize > int64(len(d.Src)) {
		d.Span(-1)
		return 0
	}
	return max(int(n), 0)
}

func (d *decoder) length() int {
	if d.flexible {
		return int(d.Uvarint()) - 1
	}
	return int(d.Int16())
}

// topic reads a topic's name (up to v12, keeping old when the same) or
// its id (from v13) in Produce and Fetch.
func (d *decoder) topic(version int16, old string) (name string, id [16]byte) {
	if version <= 12 {
		return d.name(old), id
	}
	return "", d.Uuid()
}

// name reads a non-null string, keeping old when the bytes are the same.
func (d *decoder) name(old string) string {
	b := d.Span(d.length())
	if string(b) == old {
		return old
	}
	return string(b)
}

// nullableString reads a nullable string, keeping old when it is the same.
func (d *decoder) nullableString(old *string) *string {
	l := d.length()
	if l < 0 {
		return nil
	}
	b := d.Span(l)
	if old != nil && string(b) == *old {
		return old
	}
	s := string(b)
	return &s
}

func (d *decoder) nullableBytes() []byte {
	var l int
	if d.flexible {
		l = int(d.Uvarint()) - 1
	} else {
		l = int(d.Int32())
	}
	if l < 0 {
		return nil
	}
	return d.Span(l)
}

// skipTags reads past a flexible version's tagged fields.
func (d *decoder) skipTags() {
	for k := d.Uvarint(); k > 0 && d.Ok(); k-- {
		d.Uvarint()
		d.Span(int(d.Uvarint()))
	}
}

// tags reads a flexible version's tagged fields, none of them known here.
func (d *decoder) tags(dst *kmsg.Tags) {
	if !d.flexible {
		return
	}
	for k := d.Uvarint(); k > 0 && d.Ok(); k-- {
		key := d.Uvarint()
		dst.Set(key, d.Span(int(d.Uvarint())))
	}
}

// Resize returns s with n elements, on s's array when it is large enough.
// Elements keep what an earlier request left in them, so that their own
// arrays and names can be reused; the caller overwrites every field.
func Resize[T any](s []T, n int) []T {
	if n <= cap(s) {
		return s[:n]
	}
	return append(s[:cap(s)], make([]T, n-cap(s))...)
}
