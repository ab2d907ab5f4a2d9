package main

import (
	"fmt"
	"time"
)

// runRecovery fills a topic with gb gigabytes of 1-KB records (acks=1),
// kills the broker with SIGKILL right after the last ack, restarts it on
// the same log dir, and records the time to the first answered request and
// the time until ListOffsets shows every acknowledged record again.
func runRecovery(e *env, name string, res *results, bytes int64) error {
	s, dir, err := e.start(name, "")
	if err != nil {
		return err
	}
	const parts = 8
	if err := createTopic(s.addr, "recovery", parts); err != nil {
		s.stop()
		return err
	}
	n := int(bytes / 1024)
	if _, err := produceN(producerOpts(s.addr, false), "recovery", randomValue(1024), n, nil); err != nil {
		s.stop()
		return err
	}
	acked, err := endOffsets(s.addr, "recovery")
	if err != nil {
		s.stop()
		return err
	}
	s.kill9()
	logf("  %s: %d records (%.2f GB) written, killed with SIGKILL; restarting", name, acked, float64(bytes)/1e9)
	s, err = e.restart(name, dir)
	if err != nil {
		return err
	}
	defer s.stop()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		got, err := endOffsets(s.addr, "recovery")
		if err == nil && got >= acked {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %d of %d records back after 10 minutes (%v)", name, got, acked, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	all := time.Since(s.started)
	label := fmt.Sprintf("%.1f GB", float64(bytes)/1e9)
	res.add(metric{section: "W3 resources", name: "restart after kill -9 with " + label + ": first answered Metadata", unit: "s"}, name, s.ready.Seconds())
	res.add(metric{section: "W3 resources", name: "restart after kill -9 with " + label + ": every acked record listed", unit: "s"}, name, all.Seconds())
	logf("  %s recovery: answering after %.2fs, all %d records after %.2fs", name, s.ready.Seconds(), acked, all.Seconds())
	return nil
}
