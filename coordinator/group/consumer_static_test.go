package group

import "testing"

// A static member that left with epoch -2 and comes back as a new
// incarnation (same instance id, same subscription) takes its
// predecessor's place without changing what the group consumes. As in
// Kafka's GroupMetadataManager (hasMemberSubscriptionChanged compares the
// new incarnation with the copy of the old one), the group epoch stays:
// the new incarnation gets the old partitions at the current epoch, and
// the other members keep their epoch, so the commits they have in flight
// stay valid.
func TestConsumerGroupStaticReplacementKeepsEpoch(t *testing.T) {
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 4)
	ia, ib := "i-a", "i-b"
	a, b := f.member("a", "t"), f.member("b", "t")
	a.instance, b.instance = &ia, &ib
	for range 4 {
		a.mustHeartbeat()
		b.mustHeartbeat()
	}
	d := f.describe()
	if d.State != "Stable" || a.epoch != d.Epoch || b.epoch != d.Epoch || a.owned.count() != 2 || b.owned.count() != 2 {
		t.Fatalf("group %s at epoch %d, members at %d and %d owning %v and %v; want Stable, 2 partitions each",
			d.State, d.Epoch, a.epoch, b.epoch, a.owned, b.owned)
	}
	epoch, kept := d.Epoch, b.owned

	leave := b.request()
	leave.MemberEpoch = staticLeaveEpoch
	if resp := f.c.ConsumerGroupHeartbeat(leave, "client-b", "/127.0.0.1", nil); resp.ErrorCode != 0 || resp.MemberEpoch != staticLeaveEpoch {
		t.Fatalf("static leave: %+v", resp)
	}
	b2 := f.member("b2", "t")
	b2.instance = &ib
	b2.mustHeartbeat()
	if b2.epoch != epoch || !b2.owned.equal(kept) {
		t.Errorf("new incarnation at epoch %d with %v, want epoch %d with its predecessor's %v", b2.epoch, b2.owned, epoch, kept)
	}
	if d := f.describe(); d.Epoch != epoch || d.State != "Stable" {
		t.Errorf("after the new incarnation joined: group %s at epoch %d, want Stable at %d", d.State, d.Epoch, epoch)
	}
	if resp := a.mustHeartbeat(); resp.MemberEpoch != epoch || resp.Assignment != nil {
		t.Errorf("the other member's next heartbeat: epoch %d, assignment %+v; want epoch %d and no change", resp.MemberEpoch, resp.Assignment, epoch)
	}
	checkDisjoint(t, a, b2)
}
