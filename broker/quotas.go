package broker

// Client quotas (package quota): producer_byte_rate and consumer_byte_rate
// of users, client ids and their defaults, set with AlterClientQuotas and
// read with DescribeClientQuotas (48_describe_client_quotas.go,
// 49_alter_client_quotas.go). A single node keeps them in its metadata
// file, a cluster in the controller's records (every broker enforces them
// on its own connections, as Kafka's brokers do).
//
// A produce request's size counts against its client's producer quota
// once its records are appended; a fetch's records against the consumer
// quota, and a fetch over it is answered without records (its bytes are
// taken back). Either way the response carries the throttle time and is
// sent at once, and the connection reads no further request until the
// throttle has passed (KIP-219): for every version, as Kafka mutes the
// channel after the response whether or not the client waits itself. A client
// authenticated with SASL is its user; without authentication every client
// is the user ANONYMOUS, as in Kafka.

import (
	"math"
	"time"

	"github.com/gregor-broker/gregor/quota"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// anonymousUser is the principal of a connection on a PLAINTEXT listener.
const anonymousUser = "ANONYMOUS"

var quotaKeys = []configKey{
	{"quota.window.num", "INT", "11", "The number of samples to retain in memory for client quotas.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.Quota.Samples = int(n)
		return err
	}},
	{"quota.window.size.seconds", "INT", "1", "The time span of each sample for client quotas.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.Quota.Window = time.Duration(n) * time.Second
		return err
	}},
	{"controller.quota.window.num", "INT", "11", "The number of samples to retain in memory for controller mutation quotas.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.Quota.MutationSamples = int(n)
		return err
	}},
	{"controller.quota.window.size.seconds", "INT", "1", "The time span of each sample for controller mutations quotas.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.Quota.MutationWindow = time.Duration(n) * time.Second
		return err
	}},
}

func init() {
	brokerKeys = append(brokerKeys, quotaKeys...)
}

// clientQuotas returns the quotas this node knows, keyed by entity.
func (b *Broker) clientQuotas() map[string]quota.Entry {
	if b.cluster != nil {
		if img := b.cluster.image(); img != nil {
			return img.ClientQuotas
		}
		return nil
	}
	return b.meta.clientQuotas()
}

// installQuotas hands the stored quotas to the enforcing manager.
func (b *Broker) installQuotas() {
	b.quotas.Set(b.clientQuotas())
}

// recordQuota counts bytes against the connection's quota for key and, when
// the client is over it, arranges the throttle: the connection pauses before
// its next request. It returns the throttle time in milliseconds for the
// response.
func (c *conn) recordQuota(key string, bytes int64) int32 {
	if !c.b.quotas.Active(key) {
		return 0
	}
	d := c.b.quotas.Record(key, c.principal(), c.clientID, float64(bytes), time.Now())
	if d <= 0 {
		return 0
	}
	c.throttle = d
	return int32(min(d.Milliseconds(), math.MaxInt32))
}

// requestThrottle counts the handling time of the request so far (less the
// time it sat parked) against the connection's request_percentage quota,
// once per request, and returns the throttle for a client over it: 0 when
// the request is exempt, within its quota, or already counted. handle
// counts the time when the handler returns; a fetch counts it before it
// answers, since Kafka answers a fetch over either quota without records.
func (c *conn) requestThrottle() time.Duration {
	if !c.uncounted {
		return 0
	}
	c.uncounted = false
	const percentPerNanosecond = 100.0 / float64(time.Second)
	busy := max(time.Since(c.started)-c.waited, 0)
	d := c.b.quotas.Record(quota.RequestPercentage, c.principal(), c.clientID, float64(busy)*percentPerNanosecond, time.Now())
	return min(d, c.b.cfg.Quota.Window) // Kafka bounds a request quota's throttle by a window
}

// throttleWith throttles the connection for d, unless it already is for
// longer, and puts d in resp's throttle time.
func (c *conn) throttleWith(d time.Duration, resp kmsg.Response) {
	if d <= c.throttle {
		return
	}
	c.throttle = d
	ms := int32(min(d.Milliseconds(), math.MaxInt32))
	if tr, ok := resp.(kmsg.ThrottleResponse); ok {
		if st, ok := resp.(kmsg.SetThrottleResponse); ok {
			if current, _ := tr.Throttle(); ms > current {
				st.SetThrottle(ms)
			}
		}
	}
}

// mutationQuota is one request's controller_mutation_rate (KIP-599): the
// partitions a CreateTopics, CreatePartitions or DeleteTopics creates,
// adds or deletes are taken from the client's token bucket, topic by
// topic. From the versions where Kafka is strict, a topic that finds the
// bucket in debt is refused with THROTTLING_QUOTA_EXCEEDED; before them
// every topic goes ahead and the client is throttled instead. Either way
// the response carries the throttle time. Unlike Kafka's controller,
// which keeps one bucket for the cluster, each broker keeps its own.
type mutationQuota struct {
	c        *conn
	strict   bool
	throttle time.Duration
}

// mutationQuota is nil when no controller_mutation_rate quota is set.
func (c *conn) mutationQuota(version, strictSince int16) *mutationQuota {
	if !c.b.quotas.Active(quota.ControllerMutationRate) {
		return nil
	}
	return &mutationQuota{c: c, strict: version >= strictSince}
}

// admit takes one topic's permits and reports whether it may go ahead.
func (q *mutationQuota) admit(permits int32) bool {
	if q == nil || permits <= 0 {
		return true
	}
	m, user, id, now := q.c.b.quotas, q.c.principal(), q.c.clientID, time.Now()
	if q.strict {
		if d := m.Mutations(user, id, 0, now); d > 0 {
			q.throttle = max(q.throttle, d)
			return false
		}
		m.Mutations(user, id, float64(permits), now)
		return true
	}
	q.throttle = max(q.throttle, m.Mutations(user, id, float64(permits), now))
	return true
}

// finish throttles the connection and puts the time in resp.
func (q *mutationQuota) finish(resp kmsg.Response) {
	if q != nil {
		q.c.throttleWith(q.throttle, resp)
	}
}

// throttledMessage is Kafka's message for THROTTLING_QUOTA_EXCEEDED.
var throttledMessage = kmsg.StringPtr("The throttling quota has been exceeded.")

// exemptFromRequestQuota reports the requests Kafka does not count
// against request quotas: those of other brokers (replicas' fetches,
// WriteTxnMarkers, AddPartitionsToTxn's verification), produce requests
// with acks=0 (which get no response) and the SASL exchange before a
// client is authenticated.
func exemptFromRequestQuota(c *conn, req kmsg.Request) bool {
	if c.auth != nil {
		return true
	}
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		return r.Acks == 0
	case *kmsg.FetchRequest:
		return replicaOf(r) >= 0
	case *kmsg.WriteTxnMarkersRequest:
		return true
	case *kmsg.AddPartitionsToTxnRequest:
		return r.Version >= 4
	}
	return false
}

// pause waits out a throttle, or returns false when the connection closes.
func (c *conn) pause(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.done:
		return false
	}
}
