package group

// Unload stops coordinating the groups of a partition whose leadership
// this node lost (Kafka's onResignation): their timers stop, parked
// JoinGroup and SyncGroup requests are answered NOT_COORDINATOR so the
// members look for the new coordinator, and the groups are forgotten here;
// the new leader loads them from the replicated log.
func (c *Coordinator) Unload(partition int32) {
	c.mu.Lock()
	if partition < 0 || int(partition) >= len(c.parts) {
		c.mu.Unlock()
		return
	}
	c.parts[partition] = notOwned
	delete(c.lateTxns, partition)
	var groups []*classicGroup
	for id, g := range c.groups {
		if g.partition == partition {
			groups = append(groups, g)
			delete(c.groups, id)
		}
	}
	c.mu.Unlock()
	for _, g := range groups {
		g.mu.Lock()
		g.stopTimers()
		c.answerParked(g, errNotCoordinator)
		// Open transactions are forgotten with the rest: the new leader
		// replays them from the log and gets their markers.
		c.forgetPending(g)
		g.state = Dead
		g.mu.Unlock()
	}
	c.logger.Info("unloaded group coordinator partition", "partition", partition, "groups", len(groups))
}
