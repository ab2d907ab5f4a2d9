package main

import (
	"fmt"
	"sort"
	"syscall"
	"time"
)

// runW4 grows one broker to 1,000 and then 10,000 partitions (topics of
// 1,000 partitions each) and records, at each size: creation time, idle
// CPU (percent of one core over idleFor), RSS, and full-Metadata latency.
// Creation is timed twice: until Metadata lists a leader for every
// partition, and until every partition has taken a write. Kafka answers
// Metadata from its metadata image before the broker has created the
// partitions' logs; the second time is when a producer can use them.
func runW4(e *env, name string, res *results, idleFor time.Duration) error {
	s, _, err := e.start(name, "")
	if err != nil {
		return err
	}
	defer s.stop()
	created := 0
	for _, target := range []int{1000, 10000} {
		t0 := time.Now()
		var listed time.Duration // the time spent until Metadata listed the leaders
		for created < target {
			topic := fmt.Sprintf("w4-%d", created/1000)
			t := time.Now()
			err := createTopic(s.addr, topic, 1000)
			listed += time.Since(t)
			if err == nil {
				err = writeEveryPartition(s.addr, topic, 1000)
			}
			if err != nil {
				var lim syscall.Rlimit
				_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
				return fmt.Errorf("W4 %s at %d partitions: %w (the broker had %d files open; open-file limit %d)", name, created, err, s.openFiles(), lim.Cur)
			}
			created += 1000
		}
		label := fmt.Sprintf("%d partitions", target)
		res.add(metric{section: "W4 scale", name: label + ": time until Metadata lists every leader (1,000 per topic)", unit: "s"}, name, listed.Seconds())
		res.add(metric{section: "W4 scale", name: label + ": time until every partition took a write (1,000 per topic)", unit: "s"}, name, time.Since(t0).Seconds())
		time.Sleep(5 * time.Second) // let start-up work settle before measuring idle
		c0 := s.cpuSeconds()
		time.Sleep(idleFor)
		idle := (s.cpuSeconds() - c0) / idleFor.Seconds() * 100
		rss, _ := s.memKB()
		lat, err := metadataLatency(s.addr, 20)
		if err != nil {
			return fmt.Errorf("W4 metadata %s: %w", name, err)
		}
		ms := make([]float64, len(lat))
		for i, d := range lat {
			ms[i] = float64(d) / float64(time.Millisecond)
		}
		sort.Float64s(ms)
		res.add(metric{section: "W4 scale", name: label + ": idle CPU", unit: "% of a core"}, name, idle)
		res.add(metric{section: "W4 scale", name: label + ": RSS", unit: "MB", target: 0.1}, name, float64(rss)/1024)
		res.add(metric{section: "W4 scale", name: label + ": open file descriptors", unit: "fds"}, name, float64(s.openFiles()))
		res.add(metric{section: "W4 scale", name: label + ": full Metadata latency (median of 20)", unit: "ms"}, name, ms[len(ms)/2])
		logf("  %s W4 %s: idle CPU %.1f%%, RSS %.0f MB, Metadata %.2f ms", name, label, idle, float64(rss)/1024, ms[len(ms)/2])
	}
	return nil
}
