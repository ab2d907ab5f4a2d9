package controller

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Registration gives each broker the raft index of its record as epoch and
// starts it fenced; a heartbeat unfences it once its metadata offset has
// reached that epoch.
func TestRegisterAndHeartbeat(t *testing.T) {
	tc := startCluster(t, 3, nil)
	cl := tc.client()
	var brokers []*testBroker
	for id := int32(1); id <= 3; id++ {
		brokers = append(brokers, registerBroker(t, cl, id, "rack"))
	}
	tc.waitAll("three fenced brokers", func(img *Image) bool {
		for _, b := range brokers {
			ib := img.Brokers[b.id]
			if ib == nil || !ib.Fenced || ib.Epoch != b.epoch || ib.Rack != "rack" ||
				len(ib.Endpoints) != 1 || ib.Endpoints[0].Port != int32(19000+b.id) {
				return false
			}
		}
		return true
	})
	if !(brokers[0].epoch < brokers[1].epoch && brokers[1].epoch < brokers[2].epoch) {
		t.Fatalf("epochs not increasing: %d %d %d", brokers[0].epoch, brokers[1].epoch, brokers[2].epoch)
	}

	b := brokers[0]
	r := heartbeat(t, cl, b, b.epoch-1, false, false)
	if r.ErrorCode != 0 || !r.IsFenced || r.IsCaughtUp || r.ShouldShutdown {
		t.Fatalf("behind heartbeat: %+v", r)
	}
	r = heartbeat(t, cl, b, b.epoch, true, false)
	if !r.IsFenced || !r.IsCaughtUp {
		t.Fatalf("WantFence heartbeat: %+v", r)
	}
	r = heartbeat(t, cl, b, b.epoch, false, false)
	if r.ErrorCode != 0 || r.IsFenced || !r.IsCaughtUp {
		t.Fatalf("caught-up heartbeat: %+v", r)
	}
	tc.waitAll("broker 1 unfenced", func(img *Image) bool { return !img.Brokers[1].Fenced })

	stale := *b
	stale.epoch--
	if r := heartbeat(t, cl, &stale, b.epoch, false, false); r.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("stale epoch heartbeat: error %d", r.ErrorCode)
	}
	unknown := &testBroker{id: 99, epoch: 1}
	if r := heartbeat(t, cl, unknown, 1, false, false); r.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("unknown broker heartbeat: error %d", r.ErrorCode)
	}

	// The same incarnation registering again keeps its epoch.
	again := kmsg.NewPtrBrokerRegistrationRequest()
	again.BrokerID, again.IncarnationID = b.id, b.inc
	if r := send[*kmsg.BrokerRegistrationResponse](t, cl, again); r.ErrorCode != 0 || r.BrokerEpoch != b.epoch {
		t.Fatalf("re-registration: %+v, want epoch %d", r, b.epoch)
	}
	// A wrong cluster id is refused.
	wrong := kmsg.NewPtrBrokerRegistrationRequest()
	wrong.BrokerID, wrong.ClusterID = 7, "AAAAAAAAAAAAAAAAAAAAAA"
	if r := send[*kmsg.BrokerRegistrationResponse](t, cl, wrong); r.ErrorCode != kerr.InconsistentClusterID.Code {
		t.Fatalf("wrong cluster id: error %d", r.ErrorCode)
	}
}

// A new incarnation of a broker is refused with DUPLICATE_BROKER_REGISTRATION
// while the old one holds a session, unless it brings back one of the old
// one's log dirs (the broker restarted after a crash): that one gets a new
// epoch at once, starts fenced, and the old one's leadership is gone. Once
// a broker misses its heartbeats for the session timeout, any new
// incarnation registers.
func TestNewIncarnationFencesOld(t *testing.T) {
	tc := startCluster(t, 3, func(c *Config) { c.SessionTimeout = time.Second })
	cl := tc.client()
	dir1 := newDirID()
	b1 := registerWithDirs(t, cl, 1, dir1)
	b2 := registerWithDirs(t, cl, 2, newDirID())
	stop := keepAlive(t, cl, []*testBroker{b2}, 200*time.Millisecond)
	defer stop()
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "t", NumPartitions: -1, ReplicationFactor: -1,
		ReplicaAssignment: []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1, 2}}}}}
	if r := send[*kmsg.CreateTopicsResponse](t, cl, create); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %d", r.Topics[0].ErrorCode)
	}
	register := func(inc byte, dirs ...[16]byte) *kmsg.BrokerRegistrationResponse {
		req := kmsg.NewPtrBrokerRegistrationRequest()
		req.BrokerID, req.IncarnationID, req.LogDirs = 1, [16]byte{inc}, dirs
		return send[*kmsg.BrokerRegistrationResponse](t, cl, req)
	}
	twinDir := newDirID()
	if r := register(0xee, twinDir); r.ErrorCode != kerr.DuplicateBrokerRegistration.Code {
		t.Fatalf("another process with its own log dir while broker 1 heartbeats: error %d", r.ErrorCode)
	}
	if img := tc.ctl(tc.active()).Image(); img.Brokers[1].Fenced || img.Brokers[1].Epoch != b1.epoch {
		t.Fatalf("the refused registration changed broker 1: %+v", img.Brokers[1])
	}

	r := register(0xbb, dir1, newDirID())
	if r.ErrorCode != 0 || r.BrokerEpoch <= b1.epoch {
		t.Fatalf("broker 1 restarted with its log dir: error %d, epoch %d (old %d)", r.ErrorCode, r.BrokerEpoch, b1.epoch)
	}
	reborn := &testBroker{id: 1, epoch: r.BrokerEpoch, inc: [16]byte{0xbb}}
	img := tc.ctl(tc.active()).Image()
	p := img.Topics["t"].Partitions[0]
	if !img.Brokers[1].Fenced || p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) || p.LeaderEpoch != 1 {
		t.Fatalf("after re-registration: broker %+v partition %+v", img.Brokers[1], p)
	}
	if r := heartbeat(t, cl, b1, reborn.epoch, false, false); r.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("old incarnation heartbeat: error %d", r.ErrorCode)
	}

	if r := heartbeat(t, cl, reborn, reborn.epoch, false, false); r.ErrorCode != 0 || r.IsFenced {
		t.Fatalf("unfencing the restarted broker: %+v", r)
	}
	if r := register(0xee, twinDir); r.ErrorCode != kerr.DuplicateBrokerRegistration.Code {
		t.Fatalf("another process while the restarted broker heartbeats: error %d", r.ErrorCode)
	}
	eventually(t, "another process to register once broker 1's session ends", func() bool {
		return register(0xee, twinDir).ErrorCode == 0
	})
}

// keepAlive heartbeats the brokers every interval until stop is closed.
func keepAlive(t *testing.T, cl *Client, brokers []*testBroker, every time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			for _, b := range brokers {
				req := kmsg.NewPtrBrokerHeartbeatRequest()
				req.SetVersion(req.MaxVersion())
				req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset = b.id, b.epoch, b.epoch
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				cl.Send(ctx, req)
				cancel()
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// A broker that stops heartbeating is fenced after the session timeout:
// its partitions get new leaders from the ISR (leader epoch bumped) and it
// leaves every ISR it is not alone in.
func TestMissedHeartbeatsFenceAndElectFromISR(t *testing.T) {
	tc := startCluster(t, 3, func(c *Config) { c.SessionTimeout = 1500 * time.Millisecond })
	cl := tc.client()
	brokers := registerUnfenced(t, cl, 3)
	stop := keepAlive(t, cl, brokers[:2], 200*time.Millisecond)
	defer stop()
	if r := createTopic(t, cl, "t", 6, 3, nil); r.ErrorCode != 0 {
		t.Fatalf("create: %d", r.ErrorCode)
	}
	before := tc.ctl(tc.active()).Image().Topics["t"]

	tc.waitAll("broker 3 fenced", func(img *Image) bool { return img.Brokers[3].Fenced })
	img := tc.ctl(tc.active()).Image()
	for i, p := range img.Topics["t"].Partitions {
		old := before.Partitions[i]
		if p.Leader == 3 || slices.Contains(p.ISR, 3) || len(p.ISR) != 2 {
			t.Fatalf("partition %d after fencing broker 3: %+v", i, p)
		}
		if old.Leader == 3 {
			// The first ISR member in replica order that is not broker 3.
			var want int32 = -1
			for _, r := range old.Replicas {
				if r != 3 {
					want = r
					break
				}
			}
			if p.Leader != want || p.LeaderEpoch != old.LeaderEpoch+1 {
				t.Fatalf("partition %d: leader %d epoch %d, want %d epoch %d", i, p.Leader, p.LeaderEpoch, want, old.LeaderEpoch+1)
			}
		} else if p.Leader != old.Leader || p.LeaderEpoch != old.LeaderEpoch || p.PartitionEpoch != old.PartitionEpoch+1 {
			t.Fatalf("partition %d: %+v from %+v", i, p, old)
		}
	}
	if img.Brokers[1].Fenced || img.Brokers[2].Fenced {
		t.Fatal("a heartbeating broker was fenced")
	}
}

// fenceByRequest fences a broker through a WantFence heartbeat.
func fenceByRequest(t *testing.T, cl *Client, b *testBroker) {
	t.Helper()
	if r := heartbeat(t, cl, b, b.epoch, true, false); r.ErrorCode != 0 || !r.IsFenced {
		t.Fatalf("fencing broker %d: %+v", b.id, r)
	}
}

// With unclean election off, a partition whose only ISR member is fenced
// has no leader, an empty ISR and that member as its ELR (KIP-966) and
// last known leader; unfencing it brings it back as leader. With unclean
// election on (topic override), the first usable replica takes over with
// itself as the whole ISR.
func TestUncleanElection(t *testing.T) {
	tc := startCluster(t, 3, nil)
	cl := tc.client()
	brokers := registerUnfenced(t, cl, 2)
	manual := func(name string, unclean string) {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.CreateTopicsRequestTopic{Topic: name, NumPartitions: -1, ReplicationFactor: -1,
			ReplicaAssignment: []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1, 2}}}}
		if unclean != "" {
			rt.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "unclean.leader.election.enable", Value: kmsg.StringPtr(unclean)}}
		}
		req.Topics = append(req.Topics, rt)
		if r := send[*kmsg.CreateTopicsResponse](t, cl, req); r.Topics[0].ErrorCode != 0 {
			t.Fatalf("create %s: %d", name, r.Topics[0].ErrorCode)
		}
	}
	manual("clean", "")
	manual("unclean", "true")
	// Broker 2 falls out of both ISRs; then the leader, broker 1, is fenced.
	img := tc.ctl(tc.active()).Image()
	for _, name := range []string{"clean", "unclean"} {
		p := img.Topics[name].Partitions[0]
		r := alterISR(t, cl, brokers[0], img.Topics[name], 0, p.LeaderEpoch, p.PartitionEpoch, []int32{1})
		if r.ErrorCode != 0 {
			t.Fatalf("shrinking ISR of %s: %d", name, r.ErrorCode)
		}
	}
	fenceByRequest(t, cl, brokers[0])
	img = tc.ctl(tc.active()).Image()
	if p := img.Topics["clean"].Partitions[0]; p.Leader != -1 || len(p.ISR) != 0 || !slices.Equal(p.ELR, []int32{1}) ||
		!slices.Equal(p.LastKnownELR, []int32{1}) || p.LeaderEpoch != 1 {
		t.Fatalf("clean partition after fencing its only ISR member: %+v", p)
	}
	if p := img.Topics["unclean"].Partitions[0]; p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) || p.LeaderEpoch != 1 {
		t.Fatalf("unclean partition after fencing its only ISR member: %+v", p)
	}

	// ElectLeaders UNCLEAN on the clean topic forces the out-of-ISR replica in.
	elect := kmsg.NewPtrElectLeadersRequest()
	elect.ElectionType = electUnclean
	elect.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "clean", Partitions: []int32{0}}, {Topic: "unclean", Partitions: []int32{0}}}
	er := send[*kmsg.ElectLeadersResponse](t, cl, elect)
	if er.Topics[0].Partitions[0].ErrorCode != 0 || er.Topics[1].Partitions[0].ErrorCode != kerr.ElectionNotNeeded.Code {
		t.Fatalf("unclean ElectLeaders: %+v", er.Topics)
	}
	img = tc.ctl(tc.active()).Image()
	if p := img.Topics["clean"].Partitions[0]; p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) || len(p.ELR) != 0 || len(p.LastKnownELR) != 0 {
		t.Fatalf("clean partition after unclean election: %+v", p)
	}
}

// Turning unclean election on for a leaderless partition elects an
// out-of-ISR replica at the next unclean.leader.election.interval.ms check,
// as Kafka's periodic electUnclean task does, not at the config change.
func TestUncleanElectionCheckInterval(t *testing.T) {
	for _, c := range []struct {
		interval time.Duration
		elects   bool
	}{{time.Hour, false}, {100 * time.Millisecond, true}} {
		tc := startCluster(t, 3, func(cfg *Config) { cfg.UncleanElectionCheckInterval = c.interval })
		cl := tc.client()
		brokers := registerUnfenced(t, cl, 2)
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "t", NumPartitions: -1, ReplicationFactor: -1,
			ReplicaAssignment: []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1, 2}}}}}
		if r := send[*kmsg.CreateTopicsResponse](t, cl, req); r.Topics[0].ErrorCode != 0 {
			t.Fatalf("create: %d", r.Topics[0].ErrorCode)
		}
		topic := tc.ctl(tc.active()).Image().Topics["t"]
		p := topic.Partitions[0]
		if r := alterISR(t, cl, brokers[0], topic, 0, p.LeaderEpoch, p.PartitionEpoch, []int32{1}); r.ErrorCode != 0 {
			t.Fatalf("shrinking the ISR: %d", r.ErrorCode)
		}
		fenceByRequest(t, cl, brokers[0])
		if p := tc.ctl(tc.active()).Image().Topics["t"].Partitions[0]; p.Leader != -1 {
			t.Fatalf("partition after fencing its only ISR member: %+v", p)
		}
		alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
		alter.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t",
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "unclean.leader.election.enable", Value: kmsg.StringPtr("true")}}}}
		if r := send[*kmsg.IncrementalAlterConfigsResponse](t, cl, alter); r.Resources[0].ErrorCode != 0 {
			t.Fatalf("enabling unclean election: %d", r.Resources[0].ErrorCode)
		}
		if c.elects {
			eventually(t, "the periodic unclean election", func() bool {
				p := tc.ctl(tc.active()).Image().Topics["t"].Partitions[0]
				return p.Leader == 2 && slices.Equal(p.ISR, []int32{2})
			})
			continue
		}
		time.Sleep(time.Second)
		if p := tc.ctl(tc.active()).Image().Topics["t"].Partitions[0]; p.Leader != -1 {
			t.Fatalf("elected before the hourly check: %+v", p)
		}
	}
}

// The cluster default for unclean election comes from the configuration
// unless a dynamic cluster default or topic override says otherwise; and
// unfencing the last ISR member of a leaderless partition makes it leader.
func TestUncleanDefaultAndUnfenceElects(t *testing.T) {
	tc := startCluster(t, 3, func(c *Config) { c.UncleanDefault = true })
	cl := tc.client()
	brokers := registerUnfenced(t, cl, 2)
	// Topic override turns it off for "strict".
	for _, name := range []string{"loose", "strict"} {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.CreateTopicsRequestTopic{Topic: name, NumPartitions: -1, ReplicationFactor: -1,
			ReplicaAssignment: []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1, 2}}}}
		if name == "strict" {
			rt.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "unclean.leader.election.enable", Value: kmsg.StringPtr("false")}}
		}
		req.Topics = append(req.Topics, rt)
		send[*kmsg.CreateTopicsResponse](t, cl, req)
		p := tc.ctl(tc.active()).Image().Topics[name].Partitions[0]
		alterISR(t, cl, brokers[0], tc.ctl(tc.active()).Image().Topics[name], 0, p.LeaderEpoch, p.PartitionEpoch, []int32{1})
	}
	fenceByRequest(t, cl, brokers[0])
	img := tc.ctl(tc.active()).Image()
	if p := img.Topics["loose"].Partitions[0]; p.Leader != 2 {
		t.Fatalf("loose (cluster default unclean) partition: %+v", p)
	}
	strict := img.Topics["strict"].Partitions[0]
	if strict.Leader != -1 {
		t.Fatalf("strict (topic override) partition: %+v", strict)
	}
	// Broker 1 comes back: it is the ISR of "strict" and leads it again.
	if r := heartbeat(t, cl, brokers[0], brokers[0].epoch, false, false); r.IsFenced {
		t.Fatalf("unfence: %+v", r)
	}
	img = tc.ctl(tc.active()).Image()
	if p := img.Topics["strict"].Partitions[0]; p.Leader != 1 || p.LeaderEpoch != strict.LeaderEpoch+1 {
		t.Fatalf("strict partition after unfencing its ISR member: %+v", p)
	}
}

// Controlled shutdown: leadership moves to other ISR members, the broker
// leaves every ISR (a partition where it is alone loses its leader and
// keeps it as ELR), and ShouldShutdown comes once it leads nothing.
func TestControlledShutdown(t *testing.T) {
	tc := startCluster(t, 3, nil)
	cl := tc.client()
	brokers := registerUnfenced(t, cl, 3)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "t", NumPartitions: -1, ReplicationFactor: -1,
		ReplicaAssignment: []kmsg.CreateTopicsRequestTopicReplicaAssignment{
			{Partition: 0, Replicas: []int32{1, 2, 3}},
			{Partition: 1, Replicas: []int32{2, 1, 3}},
		}}, {Topic: "solo", NumPartitions: -1, ReplicationFactor: -1,
		ReplicaAssignment: []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1}}}}}
	for _, rt := range send[*kmsg.CreateTopicsResponse](t, cl, req).Topics {
		if rt.ErrorCode != 0 {
			t.Fatalf("creating %s: %d %v", rt.Topic, rt.ErrorCode, rt.ErrorMessage)
		}
	}

	b := brokers[0]
	r := heartbeat(t, cl, b, b.epoch, false, true)
	if r.ErrorCode != 0 || r.IsFenced || r.ShouldShutdown {
		t.Fatalf("first shutdown heartbeat: %+v", r)
	}
	img := tc.ctl(tc.active()).Image()
	parts := img.Topics["t"].Partitions
	if !img.Brokers[1].ShuttingDown {
		t.Fatal("broker 1 not marked shutting down")
	}
	if p := parts[0]; p.Leader != 2 || !slices.Equal(p.ISR, []int32{2, 3}) {
		t.Fatalf("partition 0: %+v", p)
	}
	if p := parts[1]; p.Leader != 2 || !slices.Equal(p.ISR, []int32{2, 3}) || p.LeaderEpoch != 0 {
		t.Fatalf("partition 1: %+v", p)
	}
	if p := img.Topics["solo"].Partitions[0]; p.Leader != -1 || len(p.ISR) != 0 || !slices.Equal(p.ELR, []int32{1}) {
		t.Fatalf("solo's partition, broker 1's alone: %+v", p)
	}
	// A shutting-down broker cannot be placed on.
	if r := createTopic(t, cl, "rf3", 1, 3, nil); r.ErrorCode != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("RF 3 with a broker shutting down: error %d", r.ErrorCode)
	}
	// As Kafka's BrokerHeartbeatManager, it stops only once every active
	// broker has caught up with the leadership moves (its heartbeats'
	// metadata offsets), so that the new leaders lead before it is gone.
	if r = heartbeat(t, cl, b, b.epoch, false, true); r.ShouldShutdown || r.IsFenced {
		t.Fatalf("shutdown heartbeat before the other brokers caught up: %+v", r)
	}
	heartbeat(t, cl, brokers[1], int64(img.Offset), false, false)
	if r = heartbeat(t, cl, b, b.epoch, false, true); r.ShouldShutdown {
		t.Fatalf("shutdown heartbeat before broker 3 caught up: %+v", r)
	}
	heartbeat(t, cl, brokers[2], int64(img.Offset), false, false)
	r = heartbeat(t, cl, b, b.epoch, false, true)
	if !r.ShouldShutdown || !r.IsFenced {
		t.Fatalf("shutdown heartbeat once the others caught up: %+v", r)
	}
	tc.waitAll("broker 1 fenced", func(img *Image) bool { return img.Brokers[1].Fenced })
	// A broker that leads nothing shuts down at once.
	c := brokers[2]
	if r := heartbeat(t, cl, c, c.epoch, false, true); !r.ShouldShutdown {
		t.Fatalf("idle broker shutdown: %+v", r)
	}
}

// UnregisterBroker removes a registration: the broker leaves every ISR and
// leadership, as when fenced, and keeps its place in the replica lists; an
// id not registered gets BROKER_ID_NOT_REGISTERED. The unregistered
// broker's next heartbeat is refused (STALE_BROKER_EPOCH), and it may
// register again.
func TestUnregisterBroker(t *testing.T) {
	tc := startCluster(t, 3, nil)
	cl := tc.client()
	brokers := registerUnfenced(t, cl, 3)
	if r := createTopic(t, cl, "t", 3, 3, nil); r.ErrorCode != 0 {
		t.Fatalf("create: %d", r.ErrorCode)
	}
	unregister := func(id int32) *kmsg.UnregisterBrokerResponse {
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = id
		return send[*kmsg.UnregisterBrokerResponse](t, cl, req)
	}
	if r := unregister(7); r.ErrorCode != kerr.BrokerIDNotRegistered.Code || r.ErrorMessage == nil {
		t.Fatalf("unregistering broker 7, never registered: %+v", r)
	}
	if r := unregister(3); r.ErrorCode != 0 {
		t.Fatalf("unregistering broker 3: %+v", r)
	}
	tc.waitAll("broker 3 gone", func(img *Image) bool { return img.Brokers[3] == nil })
	for i, p := range tc.ctl(tc.active()).Image().Topics["t"].Partitions {
		if p.Leader == 3 || p.Leader < 0 || slices.Contains(p.ISR, 3) || !slices.Contains(p.Replicas, 3) {
			t.Fatalf("partition %d after unregistering broker 3: %+v", i, p)
		}
	}
	if r := unregister(3); r.ErrorCode != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("unregistering broker 3 twice: %+v", r)
	}
	if r := heartbeat(t, cl, brokers[2], brokers[2].epoch, false, false); r.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("heartbeat of the unregistered broker: %+v", r)
	}
	again := registerBroker(t, cl, 3, "")
	if r := heartbeat(t, cl, again, again.epoch, false, false); r.ErrorCode != 0 || r.IsFenced {
		t.Fatalf("broker 3 registered again: %+v", r)
	}
}
