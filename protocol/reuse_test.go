package protocol

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The requests generated here fill every field of every version, tagged
// fields and unknown tags included, with random values.

func randomName(rng *rand.Rand) string {
	return fmt.Sprintf("topic-%d", rng.IntN(6)) // few names, so slots see the same one again
}

func randomID(rng *rand.Rand) (id [16]byte) {
	for i := range id {
		id[i] = byte(rng.IntN(256))
	}
	return id
}

func randomTags(rng *rand.Rand) (t kmsg.Tags) {
	if rng.IntN(4) == 0 {
		t.Set(uint32(10+rng.IntN(5)), []byte{byte(rng.IntN(256)), 7})
	}
	return t
}

func randomProduce(rng *rand.Rand, version int16) *kmsg.ProduceRequest {
	r := kmsg.NewPtrProduceRequest()
	r.SetVersion(version)
	if rng.IntN(3) == 0 {
		tx := "tx"
		r.TransactionID = &tx
	}
	r.Acks, r.TimeoutMillis = int16(rng.IntN(3)-1), rng.Int32()
	r.UnknownTags = randomTags(rng)
	for range rng.IntN(4) {
		t := kmsg.ProduceRequestTopic{Topic: randomName(rng), TopicID: randomID(rng), UnknownTags: randomTags(rng)}
		for range rng.IntN(5) {
			p := kmsg.ProduceRequestTopicPartition{Partition: rng.Int32N(100), UnknownTags: randomTags(rng)}
			if rng.IntN(5) > 0 {
				p.Records = bytes.Repeat([]byte{byte(rng.IntN(256))}, rng.IntN(300))
			}
			t.Partitions = append(t.Partitions, p)
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}

func randomFetch(rng *rand.Rand, version int16) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.SetVersion(version)
	r.ReplicaID, r.MaxWaitMillis, r.MinBytes, r.MaxBytes = rng.Int32N(5)-1, rng.Int32(), rng.Int32(), rng.Int32()
	r.IsolationLevel, r.SessionID, r.SessionEpoch = int8(rng.IntN(2)), rng.Int32(), rng.Int32()
	if rng.IntN(2) == 0 {
		c := "cluster"
		r.ClusterID = &c
	}
	if rng.IntN(2) == 0 {
		r.ReplicaState.ID, r.ReplicaState.Epoch = rng.Int32N(5), rng.Int64()
		r.ReplicaState.UnknownTags = randomTags(rng)
	}
	r.Rack = []string{"", "rack-a"}[rng.IntN(2)]
	r.UnknownTags = randomTags(rng)
	for range rng.IntN(4) {
		t := kmsg.FetchRequestTopic{Topic: randomName(rng), TopicID: randomID(rng), UnknownTags: randomTags(rng)}
		for range rng.IntN(5) {
			p := kmsg.NewFetchRequestTopicPartition()
			p.Partition, p.CurrentLeaderEpoch, p.FetchOffset = rng.Int32N(100), rng.Int32(), rng.Int64()
			p.LastFetchedEpoch, p.LogStartOffset, p.PartitionMaxBytes = rng.Int32(), rng.Int64(), rng.Int32()
			if rng.IntN(2) == 0 {
				p.ReplicaDirectoryID, p.HighWatermark = randomID(rng), rng.Int64()
			}
			p.UnknownTags = randomTags(rng)
			t.Partitions = append(t.Partitions, p)
		}
		r.Topics = append(r.Topics, t)
	}
	for range rng.IntN(3) {
		t := kmsg.FetchRequestForgottenTopic{Topic: randomName(rng), TopicID: randomID(rng), UnknownTags: randomTags(rng)}
		for range rng.IntN(4) {
			t.Partitions = append(t.Partitions, rng.Int32N(100))
		}
		r.ForgottenTopics = append(r.ForgottenTopics, t)
	}
	return r
}

// decodeBoth decodes body with kmsg and with DecodeRequest into a fresh
// request of the same key and version.
func decodeBoth(key, version int16, body []byte) (viaKmsg, viaReuse kmsg.Request, errKmsg, errReuse error) {
	viaKmsg, viaReuse = kmsg.RequestForKey(key), kmsg.RequestForKey(key)
	viaKmsg.SetVersion(version)
	viaReuse.SetVersion(version)
	return viaKmsg, viaReuse, viaKmsg.ReadFrom(body), DecodeRequest(viaReuse, body)
}

// TestDecodeReuseMatchesKmsg decodes random Produce and Fetch requests of
// every version kmsg knows, fresh and into one request kept across all of
// them, and compares with kmsg's ReadFrom.
func TestDecodeReuseMatchesKmsg(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	kept := map[int16]kmsg.Request{0: kmsg.NewPtrProduceRequest(), 1: kmsg.NewPtrFetchRequest()}
	for round := 0; round < 300; round++ {
		for _, key := range []int16{0, 1} {
			max := kept[key].MaxVersion()
			version := int16(rng.IntN(int(max) + 1))
			var req kmsg.Request = randomProduce(rng, version)
			if key == 1 {
				req = randomFetch(rng, version)
			}
			body := req.AppendTo(nil)
			want, fresh, errK, errR := decodeBoth(key, version, body)
			if errK != nil || errR != nil {
				t.Fatalf("%s v%d: kmsg %v, reuse %v", kmsg.NameForKey(key), version, errK, errR)
			}
			if !reflect.DeepEqual(want, fresh) {
				t.Fatalf("%s v%d fresh:\n kmsg  %+v\n reuse %+v", kmsg.NameForKey(key), version, want, fresh)
			}
			r := kept[key]
			r.SetVersion(version)
			if err := DecodeRequest(r, body); err != nil {
				t.Fatal(err)
			}
			// Emptied arrays may stay non-nil; the encoding says the same.
			if got := r.AppendTo(nil); !bytes.Equal(got, want.AppendTo(nil)) || !bytes.Equal(got, body) {
				t.Fatalf("%s v%d decoded into a kept request: %+v, want %+v", kmsg.NameForKey(key), version, r, want)
			}
		}
	}
}

// TestDecodeReuseAllocatesNothing decodes the same shape of request again
// and again into one kept request.
func TestDecodeReuseAllocatesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	// kmsg.Tags is a map: unknown tags allocate, as with kmsg; requests
	// that carry none, and some topics and partitions, are drawn.
	draw := func(make func() kmsg.Request) kmsg.Request {
		for {
			r := make()
			if hasUnknownTags(r) {
				continue
			}
			switch r := r.(type) {
			case *kmsg.ProduceRequest:
				if len(r.Topics) > 0 && len(r.Topics[0].Partitions) > 0 {
					return r
				}
			case *kmsg.FetchRequest:
				if len(r.Topics) > 0 && len(r.Topics[0].Partitions) > 0 && len(r.ForgottenTopics) > 0 {
					return r
				}
			}
		}
	}
	for _, c := range []struct {
		req  kmsg.Request
		into kmsg.Request
	}{
		{draw(func() kmsg.Request { return randomProduce(rng, 9) }), kmsg.NewPtrProduceRequest()},
		{draw(func() kmsg.Request { return randomProduce(rng, 13) }), kmsg.NewPtrProduceRequest()},
		{draw(func() kmsg.Request { return randomFetch(rng, 11) }), kmsg.NewPtrFetchRequest()},
		{draw(func() kmsg.Request { return randomFetch(rng, 17) }), kmsg.NewPtrFetchRequest()},
	} {
		body := c.req.AppendTo(nil)
		c.into.SetVersion(c.req.GetVersion())
		if err := DecodeRequest(c.into, body); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(100, func() {
			if err := DecodeRequest(c.into, body); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s v%d: %.1f allocations per decoding", kmsg.NameForKey(c.req.Key()), c.req.GetVersion(), allocs)
		}
	}
}

func hasUnknownTags(r kmsg.Request) bool {
	found := false
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i))
			}
		case reflect.Struct:
			if tags, ok := v.Addr().Interface().(*kmsg.Tags); ok {
				found = found || tags.Len() > 0
				return
			}
			for i := 0; i < v.NumField(); i++ {
				walk(v.Field(i))
			}
		}
	}
	walk(reflect.ValueOf(r))
	return found
}

// FuzzDecodeReuse gives both decoders the same bytes: they fail together
// or agree, fresh and into a request that held another one.
func FuzzDecodeReuse(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, v := range []int16{3, 9, 13} {
		f.Add(int16(0), v, randomProduce(rng, v).AppendTo(nil))
	}
	for _, v := range []int16{4, 11, 12, 13, 17} {
		f.Add(int16(1), v, randomFetch(rng, v).AppendTo(nil))
	}
	f.Fuzz(func(t *testing.T, key, version int16, body []byte) {
		key &= 1
		max := kmsg.RequestForKey(key).MaxVersion()
		if version < 0 || version > max {
			return
		}
		want, fresh, errK, errR := decodeBoth(key, version, body)
		if (errK == nil) != (errR == nil) {
			t.Fatalf("%s v%d: kmsg %v, reuse %v", kmsg.NameForKey(key), version, errK, errR)
		}
		if errK != nil {
			return
		}
		if !reflect.DeepEqual(want, fresh) {
			t.Fatalf("%s v%d fresh:\n kmsg  %+v\n reuse %+v", kmsg.NameForKey(key), version, want, fresh)
		}
		var kept kmsg.Request = randomProduce(rng, version)
		if key == 1 {
			kept = randomFetch(rng, version)
		}
		if err := DecodeRequest(kept, body); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(kept.AppendTo(nil), want.AppendTo(nil)) {
			t.Fatalf("%s v%d into a used request: %+v, want %+v", kmsg.NameForKey(key), version, kept, want)
		}
	})
}
