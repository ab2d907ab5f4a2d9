package broker

import (
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// peerClients are a coordinator's clients to the other brokers'
// inter-broker listeners, by node id: made on first use, and made again
// when a broker's advertised address changes.
type peerClients struct {
	b    *Broker
	name string // the clients' client id, before the node id

	mu      sync.Mutex
	clients map[int32]*peerClient
}

type peerClient struct {
	addr   string
	client *kgo.Client
}

func newPeerClients(b *Broker, name string) *peerClients {
	return &peerClients{b: b, name: name, clients: map[int32]*peerClient{}}
}

// clientFor is a client to broker id, nil when its address is unknown.
func (pc *peerClients) clientFor(id int32) *kgo.Client {
	addr := pc.b.cluster.brokerAddr(id)
	if addr == "" {
		return nil
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if c := pc.clients[id]; c != nil {
		if c.addr == addr {
			return c.client
		}
		c.client.Close()
		delete(pc.clients, id)
	}
	client, err := kgo.NewClient(pc.b.interBrokerClientOpts(addr, pc.name+"-"+strconv.Itoa(int(pc.b.cfg.NodeID)), -1)...)
	if err != nil {
		pc.b.logger.Warn("inter-broker client", "client", pc.name, "err", err)
		return nil
	}
	pc.clients[id] = &peerClient{addr: addr, client: client}
	return client
}

func (pc *peerClients) close() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for id, c := range pc.clients {
		c.client.Close()
		delete(pc.clients, id)
	}
}
