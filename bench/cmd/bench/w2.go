package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// runW2 measures end-to-end latency at a fixed rate of 1-KB records on a
// 1-partition topic. Coordinated omission is avoided: record i is due at
// start + i/rate, carries that intended time, and its latency is receipt
// minus the intended time, so a stalled producer or broker is charged for
// every record that should have been sent meanwhile.
func runW2(s *server, res *results, rate int, dur, warm time.Duration, rep int) error {
	topic := fmt.Sprintf("w2-%d-%d", rep, rate)
	if err := createTopic(s.addr, topic, 1); err != nil {
		return err
	}
	lat, err := measureLatency(s.addr, topic, rate, dur, warm)
	if err != nil {
		return err
	}
	recordLatency(res, "W2 latency", fmt.Sprintf("%dk rec/s", rate/1000), s.name, lat)
	return nil
}

// latencies are one latency run's sorted samples, in microseconds: end to
// end per record, and how late the producer sent each record.
type latencies struct {
	endToEnd, lateness []float64
}

// recordLatency adds p50, p99 (with the target) and p99.9 of the
// end-to-end latencies as rows "name p50" etc. of section, and the p99 of
// the producer's lateness, which shows how much of the latency is the
// load generator's own.
func recordLatency(res *results, section, name, system string, l latencies) {
	lat := l.endToEnd
	for _, p := range []struct {
		label string
		q     float64
		tgt   float64
	}{{"p50", 50, 0}, {"p99", 99, 1.0 / 3}, {"p99.9", 99.9, 0}} {
		res.add(metric{section: section, name: name + " " + p.label, unit: "ms", target: p.tgt}, system, percentile(lat, p.q)/1000)
	}
	late := percentile(l.lateness, 99) / 1000
	res.add(metric{section: section, name: name + " producer's lateness p99", unit: "ms"}, system, late)
	logf("  %s %s %s: p50 %.2f ms p99 %.2f ms p99.9 %.2f ms (producer late by %.2f ms at p99)", system, section, name,
		percentile(lat, 50)/1000, percentile(lat, 99)/1000, percentile(lat, 99.9)/1000, late)
}

// sleepUntilDue waits d with nanosleep(2). Go's time.Sleep is no good
// below a millisecond here: a process with nothing else to run waits for
// its timers in epoll_wait, whose timeout is whole milliseconds, so a
// 100 µs sleep often returned a millisecond late (the producer's lateness
// p99 was 0.9-1.1 ms against 0.1-0.3 ms with nanosleep), and that
// lateness counts as latency against whichever broker is measured.
func sleepUntilDue(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}

// measureLatency produces 1-KB records to partition 0 of topic at rate
// records/s for warm+dur, with an idempotent acks=all producer without
// linger, and returns the sorted end-to-end latencies (microseconds) of
// the records due after the warm-up, with how late each was sent.
func measureLatency(addr, topic string, rate int, dur, warm time.Duration) (latencies, error) {
	var none latencies
	prod, err := kgo.NewClient(seeds(addr), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(1<<20))
	if err != nil {
		return none, err
	}
	defer prod.Close()
	cons, err := kgo.NewClient(seeds(addr), kgo.ConsumePartitions(
		map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return none, err
	}
	defer cons.Close()
	ctx := context.Background()
	// warm both clients' metadata and connections
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: make([]byte, 8)}).FirstErr(); err != nil {
		return none, err
	}

	total := int(float64(rate) * (warm + dur).Seconds())
	interval := time.Second / time.Duration(rate)
	base := randomValue(1024)
	start := time.Now()
	lat := make([]float64, 0, total)
	late := make([]float64, 0, total)
	var mu sync.Mutex
	done := make(chan error, 1)
	go func() {
		got := 0
		cctx, cancel := context.WithTimeout(ctx, warm+dur+30*time.Second)
		defer cancel()
		for got < total+1 {
			fs := cons.PollFetches(cctx)
			if cctx.Err() != nil {
				done <- fmt.Errorf("received %d of %d records", got, total+1)
				return
			}
			now := time.Since(start)
			fs.EachRecord(func(r *kgo.Record) {
				got++
				if len(r.Value) < 1024 {
					return // the warm-up record
				}
				due := time.Duration(binary.BigEndian.Uint64(r.Value))
				if due >= warm {
					mu.Lock()
					lat = append(lat, float64(now-due)/float64(time.Microsecond))
					mu.Unlock()
				}
			})
		}
		done <- nil
	}()
	for i := 0; i < total; i++ {
		due := time.Duration(i) * interval
		if wait := due - time.Since(start); wait > 100*time.Microsecond {
			sleepUntilDue(wait)
		}
		if due >= warm {
			late = append(late, float64(time.Since(start)-due)/float64(time.Microsecond))
		}
		v := make([]byte, 1024)
		copy(v, base)
		binary.BigEndian.PutUint64(v, uint64(due))
		prod.Produce(ctx, &kgo.Record{Topic: topic, Value: v}, nil)
	}
	if err := <-done; err != nil {
		return none, err
	}
	sort.Float64s(lat)
	sort.Float64s(late)
	return latencies{endToEnd: lat, lateness: late}, nil
}
