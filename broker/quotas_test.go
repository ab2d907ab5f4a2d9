package broker

import (
	"crypto/rand"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func quotaEntity(parts ...string) kadm.ClientQuotaEntity {
	var e kadm.ClientQuotaEntity
	for i := 0; i < len(parts); i += 2 {
		c := kadm.ClientQuotaEntityComponent{Type: parts[i]}
		if parts[i+1] != "<default>" {
			c.Name = kadm.StringPtr(parts[i+1])
		}
		e = append(e, c)
	}
	return e
}

func alterQuotas(t *testing.T, adm *kadm.Client, entries ...kadm.AlterClientQuotaEntry) kadm.AlteredClientQuotas {
	t.Helper()
	res, err := adm.AlterClientQuotas(ctxT(t), entries)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// describeQuotas lists the quotas matching the components as
// "entity: key=value ..." lines.
func describeQuotas(t *testing.T, adm *kadm.Client, strict bool, comps ...kadm.DescribeClientQuotaComponent) []string {
	t.Helper()
	qs, err := adm.DescribeClientQuotas(ctxT(t), strict, comps)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, q := range qs {
		var vals []string
		for _, v := range q.Values {
			vals = append(vals, v.String())
		}
		out = append(out, q.Entity.String()+": "+strings.Join(vals, " "))
	}
	return out
}

// TestClientQuotasAlterDescribeAndPersist sets, refuses, describes and
// removes quotas through the admin API, and reads them back after a restart.
func TestClientQuotasAlterDescribeAndPersist(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir}
	b := startBrokerWith(t, props)
	adm := newAdmin(t, b)

	res := alterQuotas(t, adm,
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("client-id", "app"), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1024}}},
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("user", "<default>"), Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 2048}}},
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("user", "alice", "client-id", "app"), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 4096}}},
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("ip", "10.0.0.1"), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 10}}},
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("client-id", "odd"), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 10.5}}},
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("group", "g"), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1}}},
	)
	for i, want := range []string{"", "", "", "Invalid configuration key producer_byte_rate", "producer_byte_rate cannot be a fractional value.", "Unhandled client quota entity type"} {
		r := res[i]
		if want == "" && r.Err != nil {
			t.Errorf("entry %d (%s): %v %s", i, r.Entity, r.Err, r.ErrMessage)
		}
		if want != "" && (!errors.Is(r.Err, kerr.InvalidRequest) || !strings.Contains(r.ErrMessage, want)) {
			t.Errorf("entry %d (%s): %v %q, want INVALID_REQUEST with %q", i, r.Entity, r.Err, r.ErrMessage, want)
		}
	}
	if _, err := adm.ValidateAlterClientQuotas(ctxT(t), []kadm.AlterClientQuotaEntry{
		{Entity: quotaEntity("client-id", "dry"), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1}}},
	}); err != nil {
		t.Fatal(err)
	}

	check := func(adm *kadm.Client) {
		t.Helper()
		all := describeQuotas(t, adm, false)
		want := []string{
			"{client-id=app}: producer_byte_rate=1024.000000",
			"{client-id=app, user=alice}: producer_byte_rate=4096.000000",
			"{user=<default>}: consumer_byte_rate=2048.000000",
		}
		if strings.Join(all, "\n") != strings.Join(want, "\n") {
			t.Fatalf("all quotas:\n%s\nwant:\n%s", strings.Join(all, "\n"), strings.Join(want, "\n"))
		}
		exact := describeQuotas(t, adm, true, kadm.DescribeClientQuotaComponent{Type: "client-id", MatchName: kadm.StringPtr("app"), MatchType: 0})
		if len(exact) != 1 || exact[0] != want[0] {
			t.Fatalf("strict client-id=app: %v", exact)
		}
		users := describeQuotas(t, adm, false, kadm.DescribeClientQuotaComponent{Type: "user", MatchType: 2})
		if len(users) != 2 {
			t.Fatalf("any user: %v", users)
		}
	}
	check(adm)

	b.Close()
	b = startBrokerWith(t, props)
	adm = newAdmin(t, b)
	check(adm)
	if !b.quotas.Active("producer_byte_rate") || !b.quotas.Active("consumer_byte_rate") {
		t.Fatal("the quotas read back at start are not enforced")
	}

	res = alterQuotas(t, adm,
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("client-id", "app"), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Remove: true}}},
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("user", "alice", "client-id", "app"), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Remove: true}}},
	)
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("remove %s: %v", r.Entity, r.Err)
		}
	}
	if left := describeQuotas(t, adm, false); len(left) != 1 || !strings.HasPrefix(left[0], "{user=<default>}") {
		t.Fatalf("after removing: %v", left)
	}
	if b.quotas.Active("producer_byte_rate") {
		t.Fatal("a removed quota is still enforced")
	}

	raw := dialRaw(t, b)
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Components = []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "user", MatchType: 0}}
	resp := raw.request(req).(*kmsg.DescribeClientQuotasResponse)
	if resp.ErrorCode != kerr.InvalidRequest.Code || resp.ErrorMessage == nil {
		t.Fatalf("exact match without a name: error %d %v, want INVALID_REQUEST", resp.ErrorCode, resp.ErrorMessage)
	}
	if _, err := filepath.Glob(filepath.Join(dir, metaFileName)); err != nil {
		t.Fatal(err)
	}
}

// quotaWindowProps measure rates over three one-second windows, so a
// client's burst allowance is two seconds of its quota.
var quotaWindowProps = map[string]string{"quota.window.num": "3", "quota.window.size.seconds": "1"}

const (
	quotaRate   = 256 << 10 // bytes per second
	quotaRecord = 10 << 10
	quotaTotal  = 1536 << 10 // six seconds of the quota; two are allowed at once
)

func setQuota(t *testing.T, adm *kadm.Client, clientID, key string, value float64) {
	t.Helper()
	for _, r := range alterQuotas(t, adm, kadm.AlterClientQuotaEntry{Entity: quotaEntity("client-id", clientID),
		Ops: []kadm.AlterClientQuotaOp{{Key: key, Value: value}}}) {
		if r.Err != nil {
			t.Fatal(r.Err, r.ErrMessage)
		}
	}
}

// throttleHook counts the throttles brokers tell a franz-go client.
type throttleHook struct{ n atomic.Int64 }

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.n.Add(1)
	}
}

func produceAll(t *testing.T, cl *kgo.Client, topic string) time.Duration {
	t.Helper()
	start := time.Now()
	for i := 0; i < quotaTotal/quotaRecord; i++ {
		value := make([]byte, quotaRecord)
		rand.Read(value) // incompressible: quotas count the bytes sent
		cl.Produce(ctxT(t), &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	if err := cl.Flush(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

// TestProduceQuotaThrottles produces six seconds' worth of a client's
// producer_byte_rate: the broker must hold it to its quota (beyond the two
// seconds' burst a fresh client may send at once) and tell it so, while a
// client without a quota is not slowed.
func TestProduceQuotaThrottles(t *testing.T) {
	b := startBroker(t, quotaWindowProps)
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "q"); err != nil {
		t.Fatal(err)
	}
	setQuota(t, adm, "slow", "producer_byte_rate", quotaRate)

	hook := &throttleHook{}
	slow := newClient(t, b, kgo.ClientID("slow"), kgo.WithHooks(hook), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(), kgo.ProducerBatchMaxBytes(64<<10))
	fast := newClient(t, b, kgo.ClientID("fast"), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	fastTook := produceAll(t, fast, "q")
	slowTook := produceAll(t, slow, "q")
	// At the quota the last 4 of the 6 seconds' worth cannot go faster
	// than 4 s; allow a second for the windows' granularity.
	if slowTook < 3*time.Second {
		t.Fatalf("%d KB under a %d KB/s quota took %v: not throttled", quotaTotal>>10, quotaRate>>10, slowTook)
	}
	if hook.n.Load() == 0 {
		t.Fatal("no produce response carried a throttle time")
	}
	if fastTook*2 > slowTook {
		t.Fatalf("the client without a quota took %v, the throttled one %v", fastTook, slowTook)
	}
}

// TestFetchQuotaThrottles consumes six seconds' worth of a client's
// consumer_byte_rate: it must take its time, be told of throttles, and
// still get every record once and in order (a throttled fetch is answered
// without records and the next one starts from the same offset).
func TestFetchQuotaThrottles(t *testing.T) {
	b := startBroker(t, quotaWindowProps)
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "q"); err != nil {
		t.Fatal(err)
	}
	// Batches of at most 64 KB: a fetch's first batch is sent whole
	// (KIP-74), and one larger than the quota allows over its window would
	// be throttled on every fetch, in Kafka as here.
	produceAll(t, newClient(t, b, kgo.ProducerBatchMaxBytes(64<<10)), "q")
	setQuota(t, adm, "reader", "consumer_byte_rate", quotaRate)

	hook := &throttleHook{}
	cl := newClient(t, b, kgo.ClientID("reader"), kgo.WithHooks(hook), kgo.ConsumeTopics("q"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxPartitionBytes(64<<10))
	start := time.Now()
	want := int64(0)
	for want < quotaTotal/quotaRecord {
		fs := cl.PollFetches(ctxT(t))
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != want {
				t.Fatalf("got offset %d, want %d", r.Offset, want)
			}
			want++
		})
	}
	took := time.Since(start)
	if took < 3*time.Second {
		t.Fatalf("%d KB under a %d KB/s quota read in %v: not throttled", quotaTotal>>10, quotaRate>>10, took)
	}
	if hook.n.Load() == 0 {
		t.Fatal("no fetch response carried a throttle time")
	}
}

// TestClusterClientQuotas sets quotas through any broker of a cluster: the
// controller stores them and every broker describes and enforces them.
func TestClusterClientQuotas(t *testing.T) {
	c := startCluster(t, 3, nil)
	adm := kadm.NewClient(c.client())
	res := alterQuotas(t, adm,
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("client-id", "<default>"), Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 1 << 20}}},
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("ip", "10.0.0.2"), Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: 1}}},
	)
	if res[0].Err != nil || !errors.Is(res[1].Err, kerr.InvalidRequest) {
		t.Fatalf("alter through the cluster: %v %s / %v %s", res[0].Err, res[0].ErrMessage, res[1].Err, res[1].ErrMessage)
	}
	c.waitFor("every broker enforcing the quota", func() bool {
		for _, b := range c.nodes {
			if !b.quotas.Active("consumer_byte_rate") {
				return false
			}
		}
		return true
	})
	for i, b := range c.nodes {
		resp := dialRaw(t, b).request(kmsg.NewPtrDescribeClientQuotasRequest()).(*kmsg.DescribeClientQuotasResponse)
		if resp.ErrorCode != 0 || len(resp.Entries) != 1 || resp.Entries[0].Entity[0].Name != nil ||
			resp.Entries[0].Values[0].Key != "consumer_byte_rate" || resp.Entries[0].Values[0].Value != 1<<20 {
			t.Fatalf("node %d describes %+v", i+1, resp)
		}
	}
}

// DescribeClientQuotas, AlterClientQuotas and DescribeUserScramCredentials
// at their lowest and highest served versions.
func TestQuotaAPIsAtBothVersions(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	for i, v := range bothEnds(49) {
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.SetVersion(v)
		name := []string{"v-low", "v-high"}[i]
		req.Entries = []kmsg.AlterClientQuotasRequestEntry{{
			Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id", Name: kmsg.StringPtr(name)}},
			Ops:    []kmsg.AlterClientQuotasRequestEntryOp{{Key: "consumer_byte_rate", Value: 100}},
		}}
		if r := rc.request(req).(*kmsg.AlterClientQuotasResponse); len(r.Entries) != 1 || r.Entries[0].ErrorCode != 0 {
			t.Fatalf("AlterClientQuotas v%d: %+v", v, r)
		}
	}
	for _, v := range bothEnds(48) {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.SetVersion(v)
		req.Components = []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "client-id", MatchType: 2}}
		r := rc.request(req).(*kmsg.DescribeClientQuotasResponse)
		if r.ErrorCode != 0 || len(r.Entries) != 2 || r.Entries[0].Values[0].Value != 100 {
			t.Fatalf("DescribeClientQuotas v%d: %+v", v, r)
		}
	}
	for _, v := range bothEnds(50) {
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		req.SetVersion(v)
		req.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{{Name: "alice"}, {Name: "bob"}, {Name: "bob"}}
		r := rc.request(req).(*kmsg.DescribeUserSCRAMCredentialsResponse)
		if r.ErrorCode != 0 || len(r.Results) != 2 || r.Results[0].ErrorCode != kerr.ResourceNotFound.Code ||
			r.Results[1].ErrorCode != kerr.DuplicateResource.Code {
			t.Fatalf("DescribeUserScramCredentials v%d: %+v", v, r)
		}
		all := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		all.SetVersion(v)
		if r := rc.request(all).(*kmsg.DescribeUserSCRAMCredentialsResponse); r.ErrorCode != 0 || len(r.Results) != 0 {
			t.Fatalf("DescribeUserScramCredentials v%d of every user: %+v", v, r)
		}
	}
}

// KIP-219: a throttled Produce is answered at once and the connection
// pauses afterwards (the next request waits), at v9 as at v5: Kafka mutes
// the channel after the response whatever the version, though clients
// older than v6 do not wait themselves.
func TestThrottleTimingFollowsKIP219(t *testing.T) {
	b := startBroker(t, map[string]string{"quota.window.num": "2", "quota.window.size.seconds": "1"})
	rc := dialRaw(t, b)
	id := createTopicRaw(t, rc, "th", 1)
	quotaReq := kmsg.NewPtrAlterClientQuotasRequest()
	quotaReq.Entries = []kmsg.AlterClientQuotasRequestEntry{{
		Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id", Name: kmsg.StringPtr("raw-test")}},
		Ops:    []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 1000}},
	}}
	if r := rc.request(quotaReq).(*kmsg.AlterClientQuotasResponse); r.Entries[0].ErrorCode != 0 {
		t.Fatalf("setting the quota: %+v", r)
	}
	produce := func(rc *rawConn, v int16) (*kmsg.ProduceResponse, time.Duration) {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(v)
		req.Acks, req.TimeoutMillis = 1, 5000
		// About 3 KB at 1,000 B/s over a one-second window: 2 s of throttle.
		batch := testBatch(10, strings.Repeat("x", 280), -1, -1, -1, 0)
		req.Topics = []kmsg.ProduceRequestTopic{{Topic: "th", TopicID: id, Partitions: []kmsg.ProduceRequestTopicPartition{{Records: batch}}}}
		start := time.Now()
		resp := rc.request(req).(*kmsg.ProduceResponse)
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 {
			t.Fatalf("produce v%d: error %d", v, p.ErrorCode)
		}
		return resp, time.Since(start)
	}

	for _, v := range []int16{9, 5} {
		if v == 5 {
			rc = dialRaw(t, b)
		}
		resp, answered := produce(rc, v)
		throttle := time.Duration(resp.ThrottleMillis) * time.Millisecond
		if throttle < time.Second {
			t.Fatalf("produce v%d over the quota: throttle %v, want about 2 s", v, throttle)
		}
		if answered > throttle/2 {
			t.Fatalf("produce v%d was answered after %v, not before its %v throttle", v, answered, throttle)
		}
		start := time.Now()
		rc.request(kmsg.NewPtrMetadataRequest())
		if waited := time.Since(start) + answered; waited < throttle*9/10 {
			t.Fatalf("after produce v%d the next request was served %v after the throttled produce, within its %v throttle", v, waited, throttle)
		}
	}
}

// request_percentage throttles a client whose requests take more of the
// broker's time than its share: the answers carry the throttle time, at
// most a quota window, and the connection reads the next request only
// once it has passed. Time parked in a fetch's long poll does not count,
// and another client id is not held back.
func TestRequestPercentageQuota(t *testing.T) {
	b, rc := startWithTopic(t, "busy")
	adm := newAdmin(t, b)
	setShare := func(percent float64) {
		res := alterQuotas(t, adm, kadm.AlterClientQuotaEntry{Entity: quotaEntity("client-id", "raw-test"),
			Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: percent}}})
		if res[0].Err != nil {
			t.Fatalf("request_percentage refused: %v %s", res[0].Err, res[0].ErrMessage)
		}
	}
	// Three 300 ms long polls would be 9% of a core over the 10 s the
	// rate is measured on, were their waits counted.
	setShare(5)
	waitFor(t, func() bool { return b.quotas.Active("request_percentage") })
	for range 3 {
		if r := rc.request(fetchReq(12, "busy", 0, 300, 1)).(*kmsg.FetchResponse); r.ThrottleMillis != 0 {
			t.Fatalf("a long poll's wait was counted: throttled %d ms", r.ThrottleMillis)
		}
	}

	// A millionth of a core: a cached Metadata answer takes about 200 ns
	// to handle, so 2000 of them are 0.4 ms of the 10 s measured, 40
	// times the share (at 0.01% they were under it on a fast machine).
	setShare(0.0001)
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(12)
	meta.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("busy")}}
	throttled := int32(0)
	for i := 0; i < 2000 && throttled < 50; i++ {
		throttled = rc.request(meta).(*kmsg.MetadataResponse).ThrottleMillis
		if throttled > 1000 {
			t.Fatalf("throttle %d ms, more than a quota window", throttled)
		}
	}
	if throttled < 50 {
		t.Fatalf("throttle %d ms after 2000 Metadata requests at 0.0001%% of a core", throttled)
	}
	start := time.Now()
	rc.request(meta)
	if waited := time.Since(start); waited < time.Duration(throttled)*time.Millisecond*8/10 {
		t.Fatalf("the request after a %d ms throttle was answered in %v", throttled, waited)
	}
	free := newClient(t, b, kgo.ClientID("free"))
	start = time.Now()
	for range 50 {
		if _, err := kadm.NewClient(free).ListTopics(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took > time.Duration(throttled)*time.Millisecond*3 {
		t.Fatalf("50 Metadata requests of another client id took %v", took)
	}
}

// controller_mutation_rate: a burst of quota.window.num x window seconds of
// the rate goes through; then, from CreateTopics v6, DeleteTopics v5 and
// CreatePartitions v3, topics are refused with THROTTLING_QUOTA_EXCEEDED
// and the throttle time, and before those versions they go ahead and the
// client is throttled.
func TestControllerMutationQuota(t *testing.T) {
	b := startBroker(t, nil)
	checkMutationQuota(t, b, newAdmin(t, b))
}

// The same through a cluster, where the broker forwards what the quota
// lets through to the controller.
func TestClusterControllerMutationQuota(t *testing.T) {
	c := startCluster(t, 1, nil)
	checkMutationQuota(t, c.nodes[0], kadm.NewClient(c.client()))
}

// checkMutationQuota runs each step on a new connection (of the same
// client id, so the same bucket): a throttled connection reads nothing
// until its throttle has passed, by which time the debt would be paid.
func checkMutationQuota(t *testing.T, b *Broker, adm *kadm.Client) {
	res := alterQuotas(t, adm, kadm.AlterClientQuotaEntry{Entity: quotaEntity("client-id", "raw-test"),
		Ops: []kadm.AlterClientQuotaOp{{Key: "controller_mutation_rate", Value: 2}}})
	if res[0].Err != nil {
		t.Fatalf("controller_mutation_rate refused: %v %s", res[0].Err, res[0].ErrMessage)
	}
	waitFor(t, func() bool { return b.quotas.Active("controller_mutation_rate") })
	dial := func() *rawConn { return dialRaw(t, b) }
	create := func(version int16, parts map[string]int32) *kmsg.CreateTopicsResponse {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(version)
		req.TimeoutMillis = 10000
		for _, name := range []string{"m1", "m2", "m3", "m4"} {
			if n, ok := parts[name]; ok {
				req.Topics = append(req.Topics, kmsg.CreateTopicsRequestTopic{Topic: name, NumPartitions: n, ReplicationFactor: 1})
			}
		}
		return dial().request(req).(*kmsg.CreateTopicsResponse)
	}
	// 11 windows of 1 s at 2 a second: a burst of 22. m1 and m2 fit while
	// the bucket is not in debt (m2 takes it to -8); m3 finds it in debt.
	sent := time.Now()
	r := create(7, map[string]int32{"m1": 20, "m2": 10, "m3": 1})
	codes := []int16{r.Topics[0].ErrorCode, r.Topics[1].ErrorCode, r.Topics[2].ErrorCode}
	if codes[0] != 0 || codes[1] != 0 || codes[2] != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("CreateTopics v7 codes %v, want 0, 0, THROTTLING_QUOTA_EXCEEDED", codes)
	}
	if r.ThrottleMillis < 3000 || r.ThrottleMillis > 4100 {
		t.Fatalf("throttle %d ms, want about 4000 (8 partitions of debt at 2/s)", r.ThrottleMillis)
	}
	// The debt has shrunk by at most the time since the first request was
	// sent, and grown by m4's partition.
	first := int64(r.ThrottleMillis)
	if r := create(5, map[string]int32{"m4": 1}); r.Topics[0].ErrorCode != 0 || int64(r.ThrottleMillis) < first-time.Since(sent).Milliseconds() {
		t.Fatalf("CreateTopics v5 (permissive): code %d, throttle %d ms %v after a throttle of %d ms; want created and throttled",
			r.Topics[0].ErrorCode, r.ThrottleMillis, time.Since(sent), first)
	}
	// In debt, a topic that exists is still told so: Kafka checks the
	// quota only for what it would create.
	if r := create(7, map[string]int32{"m1": 1}); r.Topics[0].ErrorCode != kerr.TopicAlreadyExists.Code {
		t.Fatalf("CreateTopics of an existing topic in debt: code %d, want TOPIC_ALREADY_EXISTS", r.Topics[0].ErrorCode)
	}
	// In debt, the checks Kafka makes before the quota still answer: a
	// replication factor no broker count meets, a count that adds no
	// partition, and a topic named twice.
	tooMany := kmsg.NewPtrCreateTopicsRequest()
	tooMany.SetVersion(7)
	tooMany.TimeoutMillis = 10000
	tooMany.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "m5", NumPartitions: 1, ReplicationFactor: 3}}
	if r := dial().request(tooMany).(*kmsg.CreateTopicsResponse); r.Topics[0].ErrorCode != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("CreateTopics of 3 replicas on 1 broker in debt: code %d, want INVALID_REPLICATION_FACTOR", r.Topics[0].ErrorCode)
	}
	same := kmsg.NewPtrCreatePartitionsRequest()
	same.SetVersion(3)
	same.TimeoutMillis, same.Topics = 10000, []kmsg.CreatePartitionsRequestTopic{{Topic: "m2", Count: 10}}
	if r := dial().request(same).(*kmsg.CreatePartitionsResponse); r.Topics[0].ErrorCode != kerr.InvalidPartitions.Code {
		t.Fatalf("CreatePartitions to the same count in debt: code %d, want INVALID_PARTITIONS", r.Topics[0].ErrorCode)
	}
	twice := kmsg.NewPtrDeleteTopicsRequest()
	twice.SetVersion(5)
	twice.TimeoutMillis, twice.TopicNames = 10000, []string{"m1", "m1"}
	if r := dial().request(twice).(*kmsg.DeleteTopicsResponse); len(r.Topics) != 1 || r.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("DeleteTopics of a topic named twice in debt: %+v, want one INVALID_REQUEST", r.Topics)
	}
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(5)
	del.TimeoutMillis, del.TopicNames = 10000, []string{"m1"}
	if r := dial().request(del).(*kmsg.DeleteTopicsResponse); r.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || r.ThrottleMillis <= 0 {
		t.Fatalf("DeleteTopics v5 in debt: code %d, throttle %d", r.Topics[0].ErrorCode, r.ThrottleMillis)
	}
	grow := kmsg.NewPtrCreatePartitionsRequest()
	grow.SetVersion(3)
	grow.TimeoutMillis, grow.Topics = 10000, []kmsg.CreatePartitionsRequestTopic{{Topic: "m2", Count: 12}}
	if r := dial().request(grow).(*kmsg.CreatePartitionsResponse); r.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || r.ThrottleMillis <= 0 {
		t.Fatalf("CreatePartitions v3 in debt: code %d, throttle %d", r.Topics[0].ErrorCode, r.ThrottleMillis)
	}
	if topics, err := adm.ListTopics(ctxT(t)); err != nil || topics.Has("m3") || !topics.Has("m1") || !topics.Has("m4") {
		t.Fatalf("topics after the refusals: %v %v", topics.Names(), err)
	}
}

// setRawShare gives the raw connections' client id a request_percentage
// quota and waits for the broker to enforce it.
func setRawShare(t *testing.T, b *Broker, percent float64) {
	t.Helper()
	res := alterQuotas(t, newAdmin(t, b), kadm.AlterClientQuotaEntry{Entity: quotaEntity("client-id", "raw-test"),
		Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: percent}}})
	if res[0].Err != nil {
		t.Fatalf("request_percentage refused: %v %s", res[0].Err, res[0].ErrMessage)
	}
	waitFor(t, func() bool { return b.quotas.Active("request_percentage") })
}

// Kafka does not count an acks=0 produce against the request quota
// (KafkaApis answers it with sendNoOpResponseExemptThrottle): a producer
// that sends them is not paused for a request_percentage it exceeds.
func TestAcksZeroExemptFromRequestQuota(t *testing.T) {
	b, rc := startWithTopic(t, "fire")
	setRawShare(t, b, 0.0001) // ten microseconds of a core over the ten seconds measured
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = 0
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: "fire", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: testBatch(4, "z", -1, -1, -1, 0)}}}}
	start := time.Now()
	for i := range 10 {
		if _, err := rc.nc.Write(encodeRequest(req, int32(100+i))); err != nil {
			t.Fatal(err)
		}
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	rc.corrID = 200
	rc.request(md)
	// Counted, each would have paused the connection for up to a second.
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("ten acks=0 produces and a Metadata request took %v: the produces were throttled", took)
	}
}

// Kafka answers a fetch over the client's request_percentage as one over
// its consumer_byte_rate: without records, with the throttle time.
func TestFetchOverRequestQuotaAnsweredEmpty(t *testing.T) {
	b, rc := startWithTopic(t, "busy")
	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(9)
	produce.Acks, produce.TimeoutMillis = 1, 5000
	produce.Topics = []kmsg.ProduceRequestTopic{{Topic: "busy", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: testBatch(4, "r", -1, -1, -1, 0)}}}}
	if p := rc.request(produce).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 {
		t.Fatalf("produce: error %d", p.ErrorCode)
	}
	setRawShare(t, b, 0.0001)
	for range 10 {
		r := rc.request(fetchReq(12, "busy", 0, 0, 1)).(*kmsg.FetchResponse)
		if r.ThrottleMillis == 0 {
			continue
		}
		for _, tp := range r.Topics {
			for _, p := range tp.Partitions {
				if len(p.RecordBatches) > 0 {
					t.Fatalf("a fetch throttled %d ms by the request quota carried %d bytes of records", r.ThrottleMillis, len(p.RecordBatches))
				}
			}
		}
		return
	}
	t.Fatal("ten fetches at 0.0001% of a core were not throttled")
}
