package broker

// leaderEpoch is the leader epoch of every partition on a single node: the
// leader never changes.
const leaderEpoch = 0

// advanceHighWatermark moves the high watermark to the log end offset and
// wakes parked fetches. A single node is the whole ISR, so everything
// appended is committed.
func (p *partition) advanceHighWatermark() {
	p.waitMu.Lock()
	if leo := p.log.LogEndOffset(); leo > p.log.HighWatermark() {
		p.log.SetHighWatermark(leo)
	}
	p.waitMu.Unlock()
	p.wake()
}

// checkLeaderEpoch compares a client's current leader epoch with ours, as
// Kafka does for Fetch and ListOffsets; -1 means the client did not say.
func checkLeaderEpoch(clientEpoch int32) int16 {
	switch {
	case clientEpoch < 0 || clientEpoch == leaderEpoch:
		return 0
	case clientEpoch > leaderEpoch:
		return errUnknownLeaderEpoch
	default:
		return errFencedLeaderEpoch
	}
}
