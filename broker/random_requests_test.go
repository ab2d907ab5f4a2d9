package broker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRandomRequestsKeepTheBrokerServing sends every API the broker
// advertises, at every version, with field values drawn at random: the
// edges of each integer type, negative counts and indexes, empty, long and
// odd names, names of real topics and groups, random record bytes, and
// well-formed requests with some bytes flipped, on its client listener
// and on its CONTROLLER listener. Whatever a request says,
// the broker must answer it or close that connection, never panic in a
// handler (recovered or not), and keep serving a well-behaved client.
//
// GREGOR_RANDOM_REQUESTS_SEED and GREGOR_RANDOM_REQUESTS_ROUNDS explore
// further than the fixed seed the suite runs with.
func TestRandomRequestsKeepTheBrokerServing(t *testing.T) {
	b, log := startBrokerLogged(t, singleNodeProps(t.TempDir()))
	seedNames(t, newClient(t, b, kgo.AllowAutoTopicCreation()))
	sendRandomRequests(t, b.Addr(), log)
	sendRandomRequests(t, b.ControllerAddr(), log)
	check := newClient(t, b, kgo.AllowAutoTopicCreation())
	if err := check.ProduceSync(ctxT(t), &kgo.Record{Topic: "after-random", Value: []byte("ok")}).FirstErr(); err != nil {
		t.Fatalf("after the random requests: %v", err)
	}
}

// TestRandomRequestsKeepTheClusterServing does the same to a node of a
// three-node cluster, on its client listener and on its controller
// listener (the quorum's and the brokers' APIs), then checks the cluster
// still takes and replicates writes.
func TestRandomRequestsKeepTheClusterServing(t *testing.T) {
	c := startCluster(t, 3, nil)
	seedNames(t, c.client(kgo.AllowAutoTopicCreation()))
	sendRandomRequests(t, c.addrs()[0], c.log)
	voter := strings.SplitN(strings.Split(c.props[0]["controller.quorum.voters"], ",")[0], "@", 2)[1]
	sendRandomRequests(t, voter, c.log)
	// Random UnregisterBroker requests for the real brokers' ids, and
	// random registrations for one that is fenced, displace them, as they
	// would in Kafka; each registers again at its next heartbeat. (A
	// registration for one that heartbeats gets DUPLICATE_BROKER_REGISTRATION.)
	// A broker busy making the logs of the
	// thousands of partitions random CreateTopics asked for can also miss
	// the tests' 2 s session and be fenced for a while: the cluster must
	// then take a three-replica topic again once all three are back.
	createAndWriteAfter(t, c, 3)
}

// createAndWriteAfter checks the cluster still serves after the random
// requests: it creates a topic of rf partitions and replicas, retrying
// while too few brokers are unfenced, and writes to it with acks=all.
func createAndWriteAfter(t *testing.T, c *testCluster, rf int16) {
	t.Helper()
	adm := kadm.NewClient(c.client())
	var createErr error
	c.waitFor("a topic created after the random requests", func() bool {
		_, createErr = adm.CreateTopic(ctxT(t), int32(rf), rf, nil, "after-random")
		return !errors.Is(createErr, kerr.InvalidReplicationFactor)
	})
	if createErr != nil {
		t.Fatalf("after the random requests: %v", createErr)
	}
	cl := c.client(kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "after-random", Value: []byte("ok")}).FirstErr(); err != nil {
		t.Fatalf("after the random requests: %v", err)
	}
}

// TestRandomRequestsKeepAControllerServing sends them to the CONTROLLER
// listener of a controller-only node, which answers some describe APIs
// from the metadata it follows, then checks the cluster still creates a
// topic and takes writes.
func TestRandomRequestsKeepAControllerServing(t *testing.T) {
	c := clusterProps(t, 1, 1, nil)
	c.startAll()
	seedNames(t, c.client(kgo.AllowAutoTopicCreation()))
	sendRandomRequests(t, strings.TrimPrefix(c.props[0]["listeners"], "CONTROLLER://"), c.log)
	createAndWriteAfter(t, c, 1)
}

// seedNames gives the generator real names to hit: a topic with records
// and a consumer group with a committed offset.
func seedNames(t *testing.T, cl *kgo.Client) {
	t.Helper()
	for i := range 20 {
		r := &kgo.Record{Topic: "random-topic", Key: []byte{byte(i)}, Value: []byte("v")}
		if err := cl.ProduceSync(ctxT(t), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "random-topic", Partition: 0, At: 5, LeaderEpoch: -1})
	if resp, err := kadm.NewClient(cl).CommitOffsets(ctxT(t), "random-group", offsets); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
}

// sendRandomRequests sends rounds of random requests to addr, every API
// and version that addr's ApiVersions lists, and fails on a panic in log
// or when addr stops answering a well-formed request.
func sendRandomRequests(t *testing.T, addr string, log *failureLog) {
	t.Helper()
	seed, rounds := uint64(1), 3
	if v := os.Getenv("GREGOR_RANDOM_REQUESTS_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	if v := os.Getenv("GREGOR_RANDOM_REQUESTS_ROUNDS"); v != "" {
		rounds, _ = strconv.Atoi(v)
	}
	g := &requestGen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		names: []string{"random-topic", "random-group", "__consumer_offsets", "__cluster_metadata", ""}}
	versions := dialAddr(t, addr).request(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	var sent, answered int
	for round := range rounds {
		for _, k := range versions.ApiKeys {
			for v := k.MinVersion; v <= k.MaxVersion; v++ {
				for range 4 {
					req := kmsg.RequestForKey(k.ApiKey)
					g.fill(reflect.ValueOf(req).Elem(), 0)
					req.SetVersion(v)
					frame := encodeRequest(req, int32(sent))
					if g.rng.IntN(3) == 0 {
						g.flip(frame[8:]) // after the size, key and version
					}
					if sendRandom(t, addr, frame) {
						answered++
					}
					sent++
					if p := log.find("panicked"); p != "" {
						t.Fatalf("seed %d round %d: %s v%d: a handler panicked:\n%s", seed, round, kmsg.NameForKey(k.ApiKey), v, p)
					}
				}
			}
		}
		if _, err := dialAddr(t, addr).tryRequest(kmsg.NewPtrApiVersionsRequest()); err != nil {
			t.Fatalf("seed %d round %d: %s stopped serving: %v", seed, round, addr, err)
		}
	}
	// Most requests must get as far as a handler for this to test them.
	if answered < sent/2 {
		t.Fatalf("only %d of %d random requests were answered", answered, sent)
	}
	t.Logf("%s: seed %d, %d random requests, %d answered", addr, seed, sent, answered)
}

// sendRandom sends one frame on a new connection and waits briefly for
// an answer or for the broker to close it; a request that waits longer
// (a long poll, a join) is left to the broker's own timers. It reports
// whether an answer came.
func sendRandom(t *testing.T, addr string, frame []byte) bool {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := nc.Write(frame); err != nil {
		return false
	}
	var size [4]byte
	_, err = io.ReadFull(nc, size[:])
	return err == nil
}

// requestGen fills kmsg structs with random values.
type requestGen struct {
	rng   *rand.Rand
	names []string
}

var tagsType = reflect.TypeFor[kmsg.Tags]()

func (g *requestGen) fill(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == tagsType {
			return
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() || f.Name == "Version" {
				continue
			}
			if f.Name == "Host" && f.Type.Kind() == reflect.String {
				// Endpoints stay on loopback: a node may dial them, and
				// a random name would be looked up in DNS.
				v.Field(i).SetString("127.0.0.1")
				continue
			}
			g.fill(v.Field(i), depth+1)
		}
	case reflect.Pointer:
		if g.rng.IntN(4) == 0 {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		p := reflect.New(v.Type().Elem())
		g.fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes(g.bytes())
			return
		}
		n := g.rng.IntN(4)
		if depth > 6 {
			n = 0
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			g.fill(s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Array: // UUIDs
		if g.rng.IntN(2) == 0 {
			for i := range v.Len() {
				v.Index(i).SetUint(uint64(g.rng.IntN(256)))
			}
		} else {
			v.Set(reflect.Zero(v.Type()))
		}
	case reflect.String:
		v.SetString(g.string())
	case reflect.Bool:
		v.SetBool(g.rng.IntN(2) == 0)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(g.int(v.Type().Bits()))
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(g.int(v.Type().Bits())) & (1<<v.Type().Bits() - 1))
	case reflect.Float64:
		v.SetFloat([]float64{0, -1, 1.5, math.MaxFloat64, math.NaN(), math.Inf(1)}[g.rng.IntN(6)])
	default:
		panic(fmt.Sprintf("requestGen: no values for %s", v.Type()))
	}
}

// int picks from the values that break code: the type's edges, -1, 0,
// small counts and indexes, and anything at all.
func (g *requestGen) int(bits int) int64 {
	lo, hi := int64(-1)<<(bits-1), int64(1)<<(bits-1)-1
	switch g.rng.IntN(8) {
	case 0:
		return lo
	case 1:
		return hi
	case 2:
		return -1
	case 3:
		return 0
	case 4, 5:
		return int64(g.rng.IntN(4))
	case 6:
		return int64(g.rng.IntN(3000))
	default:
		return int64(g.rng.Uint64()) >> (64 - bits)
	}
}

func (g *requestGen) string() string {
	switch g.rng.IntN(6) {
	case 0, 1:
		return g.names[g.rng.IntN(len(g.names))]
	case 2:
		return strings.Repeat("x", g.rng.IntN(300))
	case 3:
		return string([]byte{'.', '/', 0, 0xff, '\n'}[:1+g.rng.IntN(5)])
	case 4:
		return "random-" + strconv.Itoa(g.rng.IntN(5))
	default:
		b := make([]byte, g.rng.IntN(20))
		for i := range b {
			b[i] = byte(g.rng.IntN(256))
		}
		return string(b)
	}
}

// bytes is nil, random bytes, or a record batch (sometimes damaged).
func (g *requestGen) bytes() []byte {
	switch g.rng.IntN(4) {
	case 0:
		return nil
	case 1:
		b := make([]byte, g.rng.IntN(100))
		for i := range b {
			b[i] = byte(g.rng.IntN(256))
		}
		return b
	default:
		rec := kmsg.Record{Value: []byte("random")}
		rec.Length = int32(len(rec.AppendTo(nil)) - 1) // what follows the one-byte length
		batch := kmsg.RecordBatch{Magic: 2, NumRecords: 1, FirstTimestamp: time.Now().UnixMilli(), MaxTimestamp: time.Now().UnixMilli(),
			ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
			Records: rec.AppendTo(nil)}
		if g.rng.IntN(2) == 0 {
			batch.ProducerID, batch.ProducerEpoch, batch.FirstSequence = g.int(64), int16(g.int(16)), int32(g.int(32))
			batch.Attributes = int16(g.int(16))
			batch.NumRecords = int32(g.int(32))
			batch.LastOffsetDelta = int32(g.int(32))
		}
		batch.Length = int32(len(batch.AppendTo(nil)) - 12) // after the base offset and the length
		raw := batch.AppendTo(nil)
		binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
		if g.rng.IntN(3) == 0 {
			g.flip(raw)
		}
		return raw
	}
}

// flip damages a few bytes of b.
func (g *requestGen) flip(b []byte) {
	if len(b) == 0 {
		return
	}
	for range 1 + g.rng.IntN(3) {
		b[g.rng.IntN(len(b))] ^= byte(1 + g.rng.IntN(255))
	}
}

// find returns the first line of the log that contains what.
func (l *failureLog) find(what string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for line := range bytes.Lines(l.buf.Bytes()) {
		if bytes.Contains(line, []byte(what)) {
			return string(line)
		}
	}
	return ""
}
