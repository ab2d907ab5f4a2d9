package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/internal/freeport"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// clusterSize is the number of nodes of W5's clusters.
const clusterSize = 3

// cluster is three nodes of one system on 127.0.0.1, each a broker and a
// controller (Kafka's combined KRaft mode), with distinct ports and log
// dirs.
type cluster struct {
	name  string
	nodes []*server
	dirs  []string      // the nodes' data dirs
	addr  string        // the nodes' client addresses, comma separated
	ready time.Duration // from the first exec to every node answering and all brokers registered
}

// startCluster starts a three-node cluster of Gregor or Apache Kafka. Each
// node gets Kafka's shipped server.properties as one-node runs do, with its
// own node.id, ports and log dir and the static controller.quorum.voters
// of all three; Kafka's log dirs are formatted first with one cluster id
// (`kafka-storage format` without --standalone, as a static quorum needs).
func (e *env) startCluster(name string) (*cluster, error) {
	dirs := make([]string, clusterSize)
	free, err := freeport.Ports(2 * clusterSize)
	if err != nil {
		return nil, err
	}
	ports, ctls := free[:clusterSize], free[clusterSize:]
	var voters []string
	for i := range dirs {
		dirs[i] = e.freshDir(fmt.Sprintf("%s-node%d", strings.ToLower(name), i+1))
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ctls[i]))
	}
	props := make([]string, clusterSize)
	for i := range dirs {
		var err error
		if props[i], err = e.writeNodeProperties(dirs[i], i+1, ports[i], ctls[i], strings.Join(voters, ",")); err != nil {
			return nil, err
		}
		if name == sysKafka {
			if err := e.formatKafka(dirs[i], props[i]); err != nil {
				return nil, err
			}
		}
	}
	// The nodes start together: none answers until a quorum has formed.
	c := &cluster{name: name, nodes: make([]*server, clusterSize), dirs: dirs}
	errs := make([]error, clusterSize)
	var wg sync.WaitGroup
	began := time.Now()
	for i := range dirs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if name == sysKafka {
				c.nodes[i], errs[i] = e.launchKafka(name, dirs[i], props[i], ports[i])
				return
			}
			cmd := e.gregorCommand(props[i])
			c.nodes[i], errs[i] = startProcess(name, fmt.Sprintf("127.0.0.1:%d", ports[i]), cmd, filepath.Join(dirs[i], "gregor.out"), 5*time.Minute)
		}(i)
	}
	wg.Wait()
	var addrs []string
	for i, err := range errs {
		if err != nil {
			c.stop()
			return nil, fmt.Errorf("%s node %d: %w", name, i+1, err)
		}
		addrs = append(addrs, c.nodes[i].addr)
	}
	c.addr = strings.Join(addrs, ",")
	if err := waitBrokers(c.addr, clusterSize, 3*time.Minute); err != nil {
		c.stop()
		return nil, fmt.Errorf("%s cluster: %w", name, err)
	}
	c.ready = time.Since(began)
	return c, nil
}

// cpuSeconds is the CPU time of all nodes together.
func (c *cluster) cpuSeconds() float64 {
	var sum float64
	for _, s := range c.nodes {
		sum += s.cpuSeconds()
	}
	return sum
}

// close stops the cluster and removes its data dirs (unless BENCH_KEEP=1).
func (c *cluster) close() {
	c.stop()
	if os.Getenv("BENCH_KEEP") != "1" {
		for _, d := range c.dirs {
			os.RemoveAll(d)
		}
	}
}

// stop stops every node that started, all at once.
func (c *cluster) stop() {
	var wg sync.WaitGroup
	for _, s := range c.nodes {
		if s != nil {
			wg.Add(1)
			go func(s *server) { defer wg.Done(); s.stop() }(s)
		}
	}
	wg.Wait()
}

// waitBrokers polls Metadata until it lists n brokers, with a new client
// each time (a client keeps the broker list of its first answer, which
// may predate the other nodes' registration).
func waitBrokers(addr string, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	seen := 0
	for time.Now().Before(deadline) {
		if got, err := countBrokers(addr); err == nil {
			if seen = got; seen >= n {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("Metadata lists %d of %d brokers after %s", seen, n, timeout)
}

func countBrokers(addr string) (int, error) {
	cl, err := kgo.NewClient(seeds(addr))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	return len(md.Brokers), err
}
