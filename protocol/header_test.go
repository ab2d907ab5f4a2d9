package protocol

import (
	"bytes"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// clientFrames are requests encoded the way franz-go sends them, the seeds
// of the frame and header fuzzers.
func clientFrames() [][]byte {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("kgo"))
	var frames [][]byte
	add := func(r kmsg.Request, v int16) {
		r.SetVersion(v)
		frames = append(frames, f.AppendRequest(nil, r, 42))
	}
	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = "kgo", "1.0"
	add(av, 4)
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}}
	add(md, 12)
	add(kmsg.NewPtrMetadataRequest(), 1)
	pr := kmsg.NewPtrProduceRequest()
	pr.Acks = -1
	pr.Topics = []kmsg.ProduceRequestTopic{{Topic: "orders", Partitions: []kmsg.ProduceRequestTopicPartition{{Records: []byte{1, 2, 3}}}}}
	add(pr, 9)
	add(pr, 7)
	fr := kmsg.NewPtrFetchRequest()
	fr.Topics = []kmsg.FetchRequestTopic{{Topic: "orders", Partitions: []kmsg.FetchRequestTopicPartition{{FetchOffset: 10}}}}
	add(fr, 11)
	add(fr, 16)
	return frames
}

func TestParseRequestHeaderVersions(t *testing.T) {
	for _, frame := range clientFrames() {
		h, body, err := ParseRequestHeader(frame[4:])
		if err != nil {
			t.Fatal(err)
		}
		if h.CorrelationID != 42 || string(h.ClientID) != "kgo" {
			t.Fatalf("header %+v", h)
		}
		req := kmsg.RequestForKey(h.APIKey)
		req.SetVersion(h.APIVersion)
		if err := req.ReadFrom(body); err != nil {
			t.Fatalf("%s v%d body: %v", kmsg.NameForKey(h.APIKey), h.APIVersion, err)
		}
		if req.IsFlexible() != h.Flexible {
			t.Fatalf("flexible mismatch for %s v%d", kmsg.NameForKey(h.APIKey), h.APIVersion)
		}
	}
	if _, _, err := ParseRequestHeader([]byte{0, 3, 0}); !errors.Is(err, ErrShortHeader) {
		t.Fatalf("short header: %v", err)
	}
	if _, _, err := ParseRequestHeader([]byte{0, 3, 0, 12, 0, 0, 0, 1, 0, 9, 'a'}); !errors.Is(err, ErrShortHeader) {
		t.Fatalf("truncated client id: %v", err)
	}
}

func TestReadFrameLimits(t *testing.T) {
	frame := clientFrames()[0]
	got, err := ReadFrame(bytes.NewReader(frame), nil, 1<<20)
	if err != nil || !bytes.Equal(got, frame[4:]) {
		t.Fatalf("read %x, %v", got, err)
	}
	var tooLarge *FrameTooLargeError
	if _, err := ReadFrame(bytes.NewReader(frame), nil, 4); !errors.As(err, &tooLarge) {
		t.Fatalf("over the limit: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff}), nil, 1<<20); !errors.As(err, &tooLarge) {
		t.Fatalf("negative size: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader(frame[:len(frame)-1]), nil, 1<<20); err == nil {
		t.Fatal("truncated frame read without error")
	}
}

func TestAppendResponseHeaders(t *testing.T) {
	av := kmsg.NewPtrApiVersionsResponse()
	av.SetVersion(4)
	out := AppendResponse(nil, 9, av)
	// ApiVersions never carries the flexible header's tag byte.
	if out[8] != 0 || out[9] != 0 { // error code 0 directly after the correlation id
		t.Fatalf("api versions response %x", out)
	}
	md := kmsg.NewPtrMetadataResponse()
	md.SetVersion(12)
	out = AppendResponse(nil, 9, md)
	if out[8] != 0 || int(out[0])<<24|int(out[1])<<16|int(out[2])<<8|int(out[3]) != len(out)-4 {
		t.Fatalf("metadata response %x", out)
	}
}

func FuzzReadFrame(f *testing.F) {
	for _, frame := range clientFrames() {
		f.Add(frame)
	}
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		frame, err := ReadFrame(bytes.NewReader(in), nil, 1<<16)
		if err == nil && len(frame) > 1<<16 {
			t.Fatalf("frame of %d bytes above the limit", len(frame))
		}
	})
}

func FuzzParseRequestHeader(f *testing.F) {
	for _, frame := range clientFrames() {
		f.Add(frame[4:])
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		h, body, err := ParseRequestHeader(in)
		if err != nil {
			return
		}
		if len(body) > len(in) {
			t.Fatal("body longer than the frame")
		}
		// The body must decode or fail cleanly, never panic.
		req := kmsg.RequestForKey(h.APIKey)
		req.SetVersion(h.APIVersion)
		_ = req.ReadFrom(body)
	})
}

// TestHeaderFlexibility checks the header's flexibility, worked out from a
// table, against kmsg for every key and version, and that parsing a header
// allocates nothing.
func TestHeaderFlexibility(t *testing.T) {
	checked := 0
	for key := int16(0); key < 200; key++ {
		req := kmsg.RequestForKey(key)
		frame := []byte{byte(key >> 8), byte(key), 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0}
		if req == nil {
			if _, _, err := ParseRequestHeader(frame); err == nil {
				t.Fatalf("key %d, unknown to kmsg, parsed", key)
			}
			continue
		}
		for v := int16(0); v <= req.MaxVersion(); v++ {
			req.SetVersion(v)
			frame[2], frame[3] = byte(v>>8), byte(v)
			h, _, err := ParseRequestHeader(frame)
			if err != nil || h.Flexible != req.IsFlexible() || h.ClientID != nil {
				t.Fatalf("%s v%d: %+v %v, kmsg says flexible %v", kmsg.NameForKey(key), v, h, err, req.IsFlexible())
			}
			checked++
		}
	}
	if checked < 300 {
		t.Fatalf("only %d key versions checked", checked)
	}
	frame := clientFrames()[0][4:]
	if n := testing.AllocsPerRun(100, func() { _, _, _ = ParseRequestHeader(frame) }); n != 0 {
		t.Fatalf("%.1f allocations per header", n)
	}
}
