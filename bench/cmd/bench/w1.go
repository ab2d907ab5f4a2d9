package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// w1Case is one W1 shape.
type w1Case struct {
	partitions int32
	size       int
	acksAll    bool
}

func (c w1Case) String() string {
	acks := "acks=1"
	if c.acksAll {
		acks = "acks=all+idem"
	}
	return fmt.Sprintf("%dp %dB %s", c.partitions, c.size, acks)
}

func w1Cases() []w1Case {
	var out []w1Case
	for _, p := range []int32{1, 16} {
		for _, s := range []int{100, 1024} {
			for _, all := range []bool{false, true} {
				out = append(out, w1Case{p, s, all})
			}
		}
	}
	return out
}

// runW1Franz produces then consumes bytesPer bytes per case with franz-go,
// and records throughput and the broker's CPU seconds per GB moved. Every
// case first runs unmeasured at a quarter of the size, so that a JVM broker
// is measured with its hot paths compiled, as it would be in service.
func runW1Franz(s *server, res *results, bytesPer int64, rep int, traceDir string) error {
	for i, c := range w1Cases() {
		topic := fmt.Sprintf("w1-warm-%d-%d", rep, i)
		if err := createTopic(s.addr, topic, c.partitions); err != nil {
			return err
		}
		n := max(int(bytesPer/4/int64(c.size)), 2)
		if _, err := produceN(producerOpts(s.addr, c.acksAll), topic, randomValue(c.size), n, nil); err != nil {
			return fmt.Errorf("W1 warm-up produce %s: %w", c, err)
		}
		if _, err := consumeN(s.addr, topic, c.partitions, n, nil); err != nil {
			return fmt.Errorf("W1 warm-up consume %s: %w", c, err)
		}
		if err := deleteTopic(s.addr, topic); err != nil {
			return err
		}
	}
	var cpu, moved float64
	tr := clientTrace{}
	if rep == 0 {
		tr.dir = traceDir
	}
	for i, c := range w1Cases() {
		topic := fmt.Sprintf("w1-%d-%d", rep, i)
		if err := createWritableTopic(s.addr, topic, c.partitions, 1, nil); err != nil {
			return err
		}
		n := int(bytesPer / int64(c.size))
		v := randomValue(c.size)
		cpu0 := s.cpuSeconds()
		var busy busy
		direction := "produce"
		measure := func() {
			tr.start(res, s.name, c, direction)
			busy = startBusy(s, os.Getpid())
		}
		d, err := produceN(producerOpts(s.addr, c.acksAll), topic, v, n, measure)
		tr.stop()
		if err != nil {
			return fmt.Errorf("W1 produce %s: %w", c, err)
		}
		mbps := float64(n*c.size) / d.Seconds() / 1e6
		produce := metric{section: "W1 franz-go", name: "produce " + c.String(), unit: "MB/s", higher: true, target: 1.5, kfake: true}
		res.add(produce, s.name, mbps)
		busy.cores(res, produce, d)
		direction = "consume"
		d, err = consumeN(s.addr, topic, c.partitions, n+int(c.partitions), measure)
		tr.stop()
		if err != nil {
			return fmt.Errorf("W1 consume %s: %w", c, err)
		}
		cpu += s.cpuSeconds() - cpu0
		moved += 2 * float64(n*c.size)
		cmbps := float64(n*c.size) / d.Seconds() / 1e6
		consume := metric{section: "W1 franz-go", name: "consume " + c.String(), unit: "MB/s", higher: true, target: 1.5, kfake: true}
		res.add(consume, s.name, cmbps)
		busy.cores(res, consume, d)
		logf("  %s W1 %s: produce %.1f MB/s, consume %.1f MB/s", s.name, c, mbps, cmbps)
		if err := deleteTopic(s.addr, topic); err != nil {
			return err
		}
	}
	res.add(metric{section: "W3 resources", name: "broker CPU seconds per GB moved (W1 franz-go, produced+consumed)", unit: "s/GB"}, s.name, cpu/(moved/1e9))
	return nil
}

// perfCases are the shapes run with Kafka's own perf tools (a subset of
// W1, to keep the JVM start-ups within the time budget).
func perfCases() []w1Case {
	return []w1Case{{1, 1024, false}, {16, 100, false}, {16, 1024, false}, {16, 1024, true}}
}

// runW1Perf runs kafka-producer-perf-test and kafka-consumer-perf-test.
func runW1Perf(e *env, s *server, res *results, bytesPer int64, rep int, consumerPerf bool) error {
	// Kafka's tools are JVMs: they need more data than W1 to leave their warm-up behind.
	for i, c := range perfCases() {
		topic := fmt.Sprintf("perf-%d-%d", rep, i)
		if err := createWritableTopic(s.addr, topic, c.partitions, 1, nil); err != nil {
			return err
		}
		n := int(bytesPer / int64(c.size))
		acks := []string{"acks=1", "enable.idempotence=false"}
		if c.acksAll {
			acks = []string{"acks=all", "enable.idempotence=true"}
		}
		args := []string{"--topic", topic, "--num-records", fmt.Sprint(n), "--record-size", fmt.Sprint(c.size),
			"--throughput", "-1", "--producer-props", "bootstrap.servers=" + s.addr}
		tool := e.perfCmd("org.apache.kafka.tools.ProducerPerformance", append(args, acks...)...)
		busy := startBusy(s, 0)
		out, err := tool.CombinedOutput()
		if err != nil {
			return fmt.Errorf("producer-perf-test %s on %s: %v\n%s", c, s.name, err, tail(out))
		}
		mbps, err := parseProducerPerf(string(out))
		if err != nil {
			return fmt.Errorf("producer-perf-test %s on %s: %v\n%s", c, s.name, err, tail(out))
		}
		produce := metric{section: "W1 Kafka perf tools", name: "kafka-producer-perf-test " + c.String(), unit: "MB/s", higher: true, target: 1.5, kfake: true}
		res.add(produce, s.name, mbps)
		busy.seconds(res, produce, tool)
		logf("  %s producer-perf-test %s: %.1f MB/s", s.name, c, mbps)
		if !consumerPerf {
			continue
		}
		tool = e.perfCmd("org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", s.addr,
			"--topic", topic, "--messages", fmt.Sprint(n+int(c.partitions)), "--group", fmt.Sprintf("perf-%d-%d", rep, i),
			"--timeout", "30000")
		busy = startBusy(s, 0)
		out, err = tool.CombinedOutput()
		cm, perr := parseConsumerPerf(string(out))
		if err != nil || perr != nil {
			res.note(fmt.Sprintf("kafka-consumer-perf-test %s did not complete on %s: %v %v: %s", c, s.name, err, perr, lastLine(out)))
			logf("  %s consumer-perf-test %s failed: %v %v", s.name, c, err, perr)
			continue
		}
		consume := metric{section: "W1 Kafka perf tools", name: "kafka-consumer-perf-test " + c.String() + " (fetch.MB.sec)", unit: "MB/s", higher: true, target: 1.5, kfake: true}
		res.add(consume, s.name, cm)
		busy.seconds(res, consume, tool)
		logf("  %s consumer-perf-test %s: %.1f MB/s", s.name, c, cm)
	}
	return nil
}

// parseProducerPerf reads the MB/sec of the summary line:
// "N records sent, X records/sec (Y MB/sec), ...".
func parseProducerPerf(out string) (float64, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	var last float64
	found := false
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, " MB/sec)")
		j := strings.LastIndex(line[:max(i, 0)], "(")
		if !strings.Contains(line, "records sent") || i < 0 || j < 0 {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[j+1:i]), 64)
		if err == nil {
			last, found = v, true
		}
	}
	if !found {
		return 0, fmt.Errorf("no summary line")
	}
	return last, nil
}

// parseConsumerPerf reads fetch.MB.sec from the CSV line that follows the
// header "start.time, end.time, data.consumed.in.MB, MB.sec, ...".
func parseConsumerPerf(out string) (float64, error) {
	lines := strings.Split(out, "\n")
	for i, line := range lines {
		if !strings.HasPrefix(line, "start.time") || i+1 >= len(lines) {
			continue
		}
		head := strings.Split(line, ",")
		vals := strings.Split(lines[i+1], ",")
		for k, h := range head {
			if strings.TrimSpace(h) == "fetch.MB.sec" && k < len(vals) {
				return strconv.ParseFloat(strings.TrimSpace(vals[k]), 64)
			}
		}
	}
	return 0, fmt.Errorf("no result line")
}

func tail(b []byte) string {
	s := string(b)
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return s
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// cpuSection holds, for each W1 row, the CPU its client and its broker
// used, to tell whose limit a throughput is.
const cpuSection = "W1 CPU of client and broker"

// busy is the CPU the client and the broker have used when a W1 row starts.
type busy struct {
	s              *server
	clientPid      int // 0: the client is a child process, read at its exit
	client, broker float64
}

func startBusy(s *server, clientPid int) busy {
	b := busy{s: s, clientPid: clientPid, broker: s.cpuSeconds()}
	if clientPid != 0 {
		b.client = cpuSecondsOf(clientPid)
	}
	return b
}

// cores records the cores busy (CPU seconds per second) of the client in
// this process and of the broker over the row's measured time d.
func (b busy) cores(res *results, m metric, d time.Duration) {
	b.record(res, m, "cores", (cpuSecondsOf(b.clientPid)-b.client)/d.Seconds(), (b.s.cpuSeconds()-b.broker)/d.Seconds())
}

// seconds records the CPU seconds of a client tool's whole process (JVM
// start and warm-up included) and of the broker while it ran.
func (b busy) seconds(res *results, m metric, tool *exec.Cmd) {
	st := tool.ProcessState
	b.record(res, m, "CPU s", (st.UserTime() + st.SystemTime()).Seconds(), b.s.cpuSeconds()-b.broker)
}

func (b busy) record(res *results, m metric, unit string, client, broker float64) {
	name := m.section + ": " + m.name
	res.add(metric{section: cpuSection, name: name + cpuClient, unit: unit}, b.s.name, client)
	res.add(metric{section: cpuSection, name: name + cpuBroker, unit: unit}, b.s.name, broker)
}

// The suffixes that pair a row's client and broker CPU in cpuSection.
const (
	cpuClient = " (client)"
	cpuBroker = " (broker)"
)
