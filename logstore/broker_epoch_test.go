package logstore

import (
	"os"
	"path/filepath"
	"testing"
)

// A clean Close records the broker epoch it was given in
// .kafka_cleanshutdown, which PreviousBrokerEpoch reads back until the
// next OpenDir removes it; after a crash (no marker) or a marker without an epoch, the
// previous epoch is -1 (KIP-966: the controller then treats the broker as
// having shut down uncleanly).
func TestPreviousBrokerEpoch(t *testing.T) {
	root := t.TempDir()
	if got := PreviousBrokerEpoch(root); got != -1 {
		t.Fatalf("new dir: previous epoch %d, want -1", got)
	}
	d := openTestDir(t, root)
	d.SetBrokerEpoch(4242)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, cleanShutdownFile))
	if err != nil || string(data) != `{"version":0,"brokerEpoch":4242}` {
		t.Fatalf("clean shutdown file %q, %v", data, err)
	}

	if got := PreviousBrokerEpoch(root); got != 4242 {
		t.Fatalf("after a clean close: previous epoch %d, want 4242", got)
	}
	d = openTestDir(t, root)
	if got := PreviousBrokerEpoch(root); got != -1 {
		t.Fatalf("open dir: previous epoch %d, want -1 (the marker is gone)", got)
	}
	d.SetBrokerEpoch(4300)
	d.crash()

	if got := PreviousBrokerEpoch(root); got != -1 {
		t.Fatalf("after a crash: previous epoch %d, want -1", got)
	}
	d = openTestDir(t, root)
	if err := d.Close(); err != nil { // no epoch set: Kafka's single-node marker
		t.Fatal(err)
	}
	if got := PreviousBrokerEpoch(root); got != -1 {
		t.Fatalf("after a close without an epoch: previous epoch %d, want -1", got)
	}
}
