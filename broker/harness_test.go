package broker

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startBroker runs a broker on 127.0.0.1:0 with its data in a temp dir;
// props override the defaults. It is closed when the test ends.
func startBroker(t testing.TB, props map[string]string) *Broker {
	t.Helper()
	all := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir()}
	for k, v := range props {
		all[k] = v
	}
	return startBrokerWith(t, all)
}

func startBrokerWith(t testing.TB, props map[string]string) *Broker {
	t.Helper()
	b, _ := startBrokerLogged(t, props)
	return b
}

// startBrokerLogged is startBrokerWith, also returning the broker's log
// for the test to read.
func startBrokerLogged(t testing.TB, props map[string]string) (*Broker, *failureLog) {
	t.Helper()
	cfg, _, err := ParseConfig(props)
	if err != nil {
		t.Fatal(err)
	}
	log := logOnFailure(t)
	b, err := New(cfg, slog.New(slog.NewTextHandler(log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, log
}

func newClient(t testing.TB, b *Broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func newAdmin(t testing.TB, b *Broker) *kadm.Client {
	return kadm.NewClient(newClient(t, b))
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// rawConn speaks the wire protocol directly, pinned to chosen versions.
type rawConn struct {
	t      testing.TB
	nc     net.Conn
	corrID int32
}

func dialRaw(t testing.TB, b *Broker) *rawConn {
	t.Helper()
	return dialAddr(t, b.Addr())
}

func dialAddr(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc}
}

// request sends req at its set version and decodes the response.
func (r *rawConn) request(req kmsg.Request) kmsg.Response {
	r.t.Helper()
	resp, err := r.tryRequest(req)
	if err != nil {
		r.t.Fatalf("%s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp
}

func (r *rawConn) tryRequest(req kmsg.Request) (kmsg.Response, error) {
	r.corrID++
	frame := encodeRequest(req, r.corrID)
	r.nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := r.nc.Write(frame); err != nil {
		return nil, err
	}
	body, err := r.readFrame()
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	skip := 4
	if resp.IsFlexible() && req.Key() != 18 {
		skip++
	}
	if len(body) < skip {
		return nil, io.ErrUnexpectedEOF
	}
	return resp, resp.ReadFrom(body[skip:])
}

func (r *rawConn) readFrame() ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r.nc, size[:]); err != nil {
		return nil, err
	}
	n := int(size[0])<<24 | int(size[1])<<16 | int(size[2])<<8 | int(size[3])
	body := make([]byte, n)
	_, err := io.ReadFull(r.nc, body)
	return body, err
}

// expectClosed asserts the broker closed the connection.
func (r *rawConn) expectClosed() {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var buf [1]byte
	if _, err := r.nc.Read(buf[:]); err == nil {
		r.t.Fatal("expected the broker to close the connection, but it answered")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		r.t.Fatal("expected the broker to close the connection, but it stayed open")
	}
}

// encodeRequest frames req at its set version, as a client would.
func encodeRequest(req kmsg.Request, correlationID int32) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw-test")).AppendRequest(nil, req, correlationID)
}

// startWithTopic starts a default broker, creates a one-partition topic
// and returns a raw connection to it.
// onBothLayouts runs check against a single node and against a
// one-node cluster (a broker and its controller), each fresh, with a raw
// connection to the broker.
func onBothLayouts(t *testing.T, check func(t *testing.T, b *Broker, rc *rawConn)) {
	t.Run("single node", func(t *testing.T) {
		b := startBroker(t, nil)
		check(t, b, dialRaw(t, b))
	})
	t.Run("cluster", func(t *testing.T) {
		b := startCluster(t, 1, nil).nodes[0]
		check(t, b, dialRaw(t, b))
	})
}

func startWithTopic(t *testing.T, topic string) (*Broker, *rawConn) {
	t.Helper()
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, topic, 1)
	return b, rc
}

// initProducerID asks for an idempotent producer id.
func initProducerID(rc *rawConn) int64 {
	rc.t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(5)
	req.ProducerID, req.ProducerEpoch = -1, -1
	return rc.request(req).(*kmsg.InitProducerIDResponse).ProducerID
}

// configRefusal is a change to a valid configuration (an empty value
// removes the key) and the start-up error it must be refused with.
type configRefusal struct {
	extra map[string]string
	want  string
}

// checkConfigRefusals applies each change to a fresh props() and expects
// ParseConfig to refuse it with an error containing want.
func checkConfigRefusals(t *testing.T, props func() map[string]string, cases map[string]configRefusal) {
	t.Helper()
	for name, c := range cases {
		p := props()
		for k, v := range c.extra {
			if v == "" {
				delete(p, k)
			} else {
				p[k] = v
			}
		}
		_, _, err := ParseConfig(p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, c.want)
		}
	}
}

// failureLog keeps a broker's log in memory; the test prints it if it fails.
type failureLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func logOnFailure(t testing.TB) *failureLog {
	l := &failureLog{}
	t.Cleanup(func() {
		if t.Failed() {
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Logf("broker log:\n%s", l.buf.Bytes())
		}
	})
	return l
}

func (l *failureLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *failureLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
