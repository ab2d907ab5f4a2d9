package broker

import (
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestQueuedMaxRequestBytes: requests larger together than
// queued.max.request.bytes pass one after another, as each gives its bytes
// back once handled; a request whose body is still arriving holds what it
// took, so with the budget spent another connection's request is not read
// until that connection goes away.
func TestQueuedMaxRequestBytes(t *testing.T) {
	b := startBroker(t, map[string]string{"socket.request.max.bytes": "1048576", "queued.max.request.bytes": "1048576"})
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "queued", 1)
	for i := range 3 { // about 600 KB each: the third needs the first's bytes back
		req := produceOf(1, "queued", map[int32][]byte{0: bigBatch(600, strconv.Itoa(i))}, []int32{0})
		if p := rc.request(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != int64(600*i) {
			t.Fatalf("produce %d: %+v", i, p)
		}
	}

	// A 1 MB frame whose body stops after 100 bytes takes the whole budget.
	stalled := dialRaw(t, b)
	if _, err := stalled.nc.Write(append(binary.BigEndian.AppendUint32(nil, 1<<20), make([]byte, 100)...)); err != nil {
		t.Fatal(err)
	}
	other := dialRaw(t, b)
	answered := func(wait time.Duration) bool {
		t.Helper()
		other.nc.SetReadDeadline(time.Now().Add(wait))
		_, err := other.readFrame()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		return true
	}
	blocked := false
	for try := 0; try < 50 && !blocked; try++ {
		other.corrID++
		if _, err := other.nc.Write(encodeRequest(kmsg.NewPtrApiVersionsRequest(), other.corrID)); err != nil {
			t.Fatal(err)
		}
		blocked = !answered(300 * time.Millisecond)
	}
	if !blocked {
		t.Fatal("requests were still read with the whole budget taken by an unfinished frame")
	}
	stalled.nc.Close()
	if !answered(10 * time.Second) {
		t.Fatal("the waiting request was not read after the unfinished frame's connection closed")
	}
}

// TestParkedRequestGivesItsBytesBack: a JoinGroup that waits out the
// group's initial rebalance delay holding the whole queued.max.request.bytes
// budget gives it back as it parks, so other requests are still read.
func TestParkedRequestGivesItsBytesBack(t *testing.T) {
	const budget = 1 << 20
	b := startBroker(t, map[string]string{"socket.request.max.bytes": strconv.Itoa(budget), "queued.max.request.bytes": strconv.Itoa(budget),
		"group.initial.rebalance.delay.ms": "5000"})
	join := kmsg.NewPtrJoinGroupRequest()
	join.SetVersion(3) // no member id round trip: the first join parks at once
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "parked", "consumer", 30000, 30000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	size := func() int { return len(encodeRequest(join, 1)) - 4 }
	join.Protocols[0].Metadata = make([]byte, budget-size())
	if size() != budget {
		t.Fatalf("join request of %d bytes, want %d", size(), budget)
	}
	joiner := dialRaw(t, b)
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.CoordinatorKey = "parked"
	if r := joiner.request(find).(*kmsg.FindCoordinatorResponse); r.ErrorCode != 0 {
		t.Fatalf("find coordinator: error %d", r.ErrorCode)
	}
	joiner.corrID++
	if _, err := joiner.nc.Write(encodeRequest(join, joiner.corrID)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the join is read and parks
	other := dialRaw(t, b)
	other.corrID++
	if _, err := other.nc.Write(encodeRequest(kmsg.NewPtrApiVersionsRequest(), other.corrID)); err != nil {
		t.Fatal(err)
	}
	other.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := other.readFrame(); err != nil {
		t.Fatalf("a request sent while a join was parked with the whole budget: %v", err)
	}
	joiner.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	body, err := joiner.readFrame()
	if err != nil {
		t.Fatalf("the join's answer: %v", err)
	}
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.SetVersion(3)
	if err := resp.ReadFrom(body[4:]); err != nil || resp.ErrorCode != 0 || len(resp.Members) != 1 {
		t.Fatalf("the join's answer: %+v %v", resp, err)
	}
}

// TestWaitingForRequestMemoryHoldsNoBuffer: connections waiting for
// queued.max.request.bytes hold no buffer for the frames they have not
// read yet, as Kafka's NetworkReceive takes a frame's buffer from the
// memory pool only when the pool gives it: the budget bounds the memory.
func TestWaitingForRequestMemoryHoldsNoBuffer(t *testing.T) {
	const budget = 4 << 20
	b := startBroker(t, map[string]string{"socket.request.max.bytes": strconv.Itoa(budget), "queued.max.request.bytes": strconv.Itoa(budget)})
	large := append(binary.BigEndian.AppendUint32(nil, budget), make([]byte, 100)...)
	stalled := dialRaw(t, b) // takes the whole budget, its body unfinished
	if _, err := stalled.nc.Write(large); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 8 {
		if _, err := dialRaw(t, b).nc.Write(large); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	runtime.ReadMemStats(&after)
	if grown := after.TotalAlloc - before.TotalAlloc; grown > budget {
		t.Fatalf("eight connections waiting for the budget made the broker allocate %d MiB", grown>>20)
	}
}
