package main

import (
	"fmt"
	"time"
)

const w5Section = "W5 three nodes (RF 3, min.insync.replicas=2)"

// runW5 is one repetition of W5 for Gregor or Kafka: a fresh three-node
// cluster; for 1 and 16 partitions, a topic of replication factor 3 and
// min.insync.replicas=2, produced with acks=all and idempotence and then
// consumed (franz-go, 1-KB records); end-to-end latency at a fixed rate on
// a 1-partition topic of the same kind; then the RSS of each node. An
// unmeasured produce and consume comes first. kfake
// has no cluster mode and is not measured.
func runW5(e *env, st settings, res *results, name string, rep int) error {
	c, err := e.startCluster(name)
	if err != nil {
		return err
	}
	defer c.close()
	res.add(metric{section: w5Section, name: "start-up: exec to three brokers registered", unit: "s"}, name, c.ready.Seconds())
	logf("  %s cluster answering in %s at %s", name, c.ready.Round(time.Millisecond), c.addr)
	minISR := "2"
	configs := map[string]*string{"min.insync.replicas": &minISR}
	v := randomValue(1024)
	n := int(st.w5Bytes / 1024)
	// A quarter of a case's bytes first, unmeasured, on a topic of its own:
	// both systems start cold here (three fresh processes, and Kafka's JIT).
	warm := fmt.Sprintf("w5-%d-warm-up", rep)
	if err := createReplicatedTopic(c.addr, warm, 16, clusterSize, configs); err != nil {
		return err
	}
	if _, err := produceN(producerOpts(c.addr, true), warm, v, n/4, nil); err != nil {
		return fmt.Errorf("W5 warm-up: %w", err)
	}
	if _, err := consumeN(c.addr, warm, 16, n/4, nil); err != nil {
		return fmt.Errorf("W5 warm-up: %w", err)
	}
	for _, p := range []int32{1, 16} {
		topic := fmt.Sprintf("w5-%d-%d", rep, p)
		if err := createWritableTopic(c.addr, topic, p, clusterSize, configs); err != nil {
			return err
		}
		var cpu0 float64
		d, err := produceN(producerOpts(c.addr, true), topic, v, n, func() { cpu0 = c.cpuSeconds() })
		if err != nil {
			return fmt.Errorf("W5 produce %dp: %w", p, err)
		}
		busy := (c.cpuSeconds() - cpu0) / d.Seconds()
		mbps := float64(n*1024) / d.Seconds() / 1e6
		res.add(metric{section: w5Section, name: fmt.Sprintf("produce %dp 1024B acks=all+idem", p), unit: "MB/s", higher: true, target: 1.5}, name, mbps)
		res.add(metric{section: w5Section, name: fmt.Sprintf("cores busy during produce %dp, three nodes together (CPU s / wall s)", p), unit: "cores"}, name, busy)
		d, err = consumeN(c.addr, topic, p, n+int(p), nil)
		if err != nil {
			return fmt.Errorf("W5 consume %dp: %w", p, err)
		}
		cmbps := float64(n*1024) / d.Seconds() / 1e6
		res.add(metric{section: w5Section, name: fmt.Sprintf("consume %dp 1024B", p), unit: "MB/s", higher: true, target: 1.5}, name, cmbps)
		logf("  %s W5 %dp: produce %.1f MB/s, consume %.1f MB/s", name, p, mbps, cmbps)
	}
	topic := fmt.Sprintf("w5-%d-latency", rep)
	if err := createReplicatedTopic(c.addr, topic, 1, clusterSize, configs); err != nil {
		return err
	}
	lat, err := measureLatency(c.addr, topic, st.w5Rate, st.w2Dur, st.w2Warm)
	if err != nil {
		return fmt.Errorf("W5 latency: %w", err)
	}
	recordLatency(res, w5Section, fmt.Sprintf("latency %dk rec/s", st.w5Rate/1000), name, lat)
	var sum, most, peak int64
	for _, s := range c.nodes {
		rss, hwm := s.memKB()
		sum += rss
		most = max(most, rss)
		peak = max(peak, hwm)
	}
	res.add(metric{section: w5Section, name: "RSS per node after the workload (mean of 3)", unit: "MB", target: 0.1}, name, float64(sum)/clusterSize/1024)
	res.add(metric{section: w5Section, name: "RSS of the largest node after the workload", unit: "MB"}, name, float64(most)/1024)
	res.add(metric{section: w5Section, name: "peak RSS of the largest node (VmHWM)", unit: "MB"}, name, float64(peak)/1024)
	logf("  %s W5 RSS per node: mean %.0f MB, largest %.0f MB, peak %.0f MB", name, float64(sum)/clusterSize/1024, float64(most)/1024, float64(peak)/1024)
	return nil
}
