package broker

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A produce request's appends run after every partition's checks, as a
// list of appendJobs. A request carrying enough bytes for several
// partitions has its appends spread over the cores: the connection's
// goroutine takes one share and hands the others to appenders, a few
// goroutines shared by the whole process (one per core beyond the
// first). The copy into the page cache is most of a large append's
// cost (docs/perf), and a client with one request in flight waits for
// all of it. Each job writes only its own answer, and a request that
// names a partition twice keeps its appends in order (one goroutine).

// spreadMinBytes is the size of a request's batches from which its
// appends are spread: below it, handing work over costs more than it
// saves.
const spreadMinBytes = 1 << 20

// appendJob is one partition's batch of a produce request and, once
// appended, its outcome.
type appendJob struct {
	p       *partition
	state   *replicaState // when the checks passed
	records []byte
	topic   int // the answer's place in the response
	part    int
	code    int16
	msg     string
	// verifyTxn: a transactional batch that would open a transaction
	// needs txnToken, its verification (txn_verify.go).
	verifyTxn bool
	txnToken  uint64
}

// appendShare is a run of a request's jobs that an appender takes.
type appendShare struct {
	b       *Broker
	jobs    []appendJob
	version int16
	resp    *kmsg.ProduceResponse
	done    *sync.WaitGroup
	failed  *atomic.Bool // set when an append panicked
}

var (
	appenders      chan appendShare
	startAppenders sync.Once

	// spreadRequests counts the requests whose appends were spread (for
	// tests); sequentialAppends turns spreading off (for benchmarks).
	spreadRequests    atomic.Int64
	sequentialAppends atomic.Bool
)

// appenderQueue returns the appenders' queue (nil with one core),
// starting them on first use.
func appenderQueue() chan appendShare {
	startAppenders.Do(func() {
		n := runtime.GOMAXPROCS(0) - 1
		if n < 1 {
			return
		}
		appenders = make(chan appendShare, n)
		for range n {
			go func() {
				for s := range appenders {
					s.run()
				}
			}()
		}
	})
	return appenders
}

// appendAll appends every job, spreading them over the cores when the
// request is large enough.
func (b *Broker) appendAll(c *conn, jobs []appendJob, version int16, resp *kmsg.ProduceResponse) {
	total := 0
	for i := range jobs {
		total += len(jobs[i].records)
	}
	queue := appenderQueue()
	if queue == nil || len(jobs) < 2 || total < spreadMinBytes || sequentialAppends.Load() || !c.reuse.distinct(jobs) {
		b.runAppends(jobs, version, resp)
		return
	}
	spreadRequests.Add(1)
	shares := min(cap(queue)+1, len(jobs))
	share := appendShare{b: b, version: version, resp: resp, done: &c.reuse.appending, failed: &c.reuse.appendFailed}
	// Contiguous shares of about total/shares bytes each; the first one
	// is the connection's own.
	first, start, acc, k := jobs, 0, 0, 1
	for i := range jobs {
		acc += len(jobs[i].records)
		if k < shares && acc >= total*k/shares && i+1 < len(jobs) {
			if k == 1 {
				first = jobs[:i+1]
			} else {
				share.handOver(queue, jobs[start:i+1])
			}
			start, k = i+1, k+1
		}
	}
	if start > 0 {
		share.handOver(queue, jobs[start:])
	}
	share.jobs = first
	share.done.Add(1)
	share.run()
	share.done.Wait()
	if share.failed.Swap(false) {
		// As if the handler itself had panicked: conn.handle closes the
		// connection.
		panic("a produce append panicked (logged above)")
	}
}

// handOver gives jobs to an appender, or appends them here when every
// appender is busy.
func (s appendShare) handOver(queue chan appendShare, jobs []appendJob) {
	s.jobs = jobs
	s.done.Add(1)
	select {
	case queue <- s:
	default:
		s.run()
	}
}

// run appends the share's jobs and marks it done. A panic is logged with
// its stack and marked on the request, so that it costs the connection,
// never the broker or the other shares.
func (s appendShare) run() {
	defer s.done.Done()
	defer func() {
		if p := recover(); p != nil {
			s.b.logger.Error("append panicked", "panic", p, "stack", string(debug.Stack()))
			s.failed.Store(true)
		}
	}()
	s.b.runAppends(s.jobs, s.version, s.resp)
}

func (b *Broker) runAppends(jobs []appendJob, version int16, resp *kmsg.ProduceResponse) {
	for i := range jobs {
		j := &jobs[i]
		sp := &resp.Topics[j.topic].Partitions[j.part]
		j.code, j.msg = b.appendRecords(j, version, sp)
		if j.code != 0 && !appendErrorWithoutLogStart(j.code) {
			sp.LogStartOffset = j.p.log.LogStartOffset()
		}
	}
}
