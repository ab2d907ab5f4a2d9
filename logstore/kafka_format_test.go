package logstore

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The snapshots in testdata were written by Kafka 4.4's kafka-storage
// format: with --initial-controllers
// "1@127.0.0.1:19093:AAAAAAAAAAAAAAAAAAAAAQ,2@127.0.0.1:29093:AAAAAAAAAAAAAAAAAAAAAg,3@127.0.0.1:39093:AAAAAAAAAAAAAAAAAAAAAw",
// with --standalone (node 1, CONTROLLER://127.0.0.1:19093, directory id
// cg9mycngRLeqjC4emwSWEg), and for controller.quorum.voters, which
// records no voters.
func TestFormattedVoters(t *testing.T) {
	dirID := func(s string) [16]byte {
		u, err := ParseUUID(s)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	endpoint := func(port uint16) []FormattedEndpoint {
		return []FormattedEndpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: port}}
	}
	for _, c := range []struct {
		file string
		want []FormattedVoter
	}{
		{"kafka-4.4-initial-controllers.checkpoint", []FormattedVoter{
			{1, dirID("AAAAAAAAAAAAAAAAAAAAAQ"), endpoint(19093)},
			{2, dirID("AAAAAAAAAAAAAAAAAAAAAg"), endpoint(29093)},
			{3, dirID("AAAAAAAAAAAAAAAAAAAAAw"), endpoint(39093)},
		}},
		{"kafka-4.4-standalone.checkpoint", []FormattedVoter{{1, dirID("cg9mycngRLeqjC4emwSWEg"), endpoint(19093)}}},
		{"kafka-4.4-static-voters.checkpoint", nil},
	} {
		dir := formattedDir(t, c.file)
		f, err := ReadFormatted(dir)
		if got := f.Voters; err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, %v; want %+v", c.file, got, err, c.want)
		}
		// A torn snapshot is an error, not an empty voter set.
		if c.want != nil {
			data, _ := os.ReadFile(filepath.Join(dir, bootstrapSnapshot))
			if err := os.WriteFile(filepath.Join(dir, bootstrapSnapshot), data[:len(data)-100], 0o644); err != nil {
				t.Fatal(err)
			}
			if got, err := ReadFormatted(dir); err == nil {
				t.Errorf("%s cut short: %+v without an error", c.file, got)
			}
		}
	}
	if got, err := ReadFormatted(t.TempDir()); !reflect.DeepEqual(got, Formatted{}) || err != nil {
		t.Errorf("a dir kafka-storage did not format: %+v, %v", got, err)
	}
}

// formattedDir puts a testdata snapshot where kafka-storage format writes
// it in a new dir.
func formattedDir(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, kraftMetadataDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, bootstrapSnapshot), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The format records metadata.version and each feature its release puts
// above 0: Kafka 4.4's defaults in the --standalone snapshot;
// kafka-4.4-release-3.9-scram.checkpoint was formatted --standalone with
// --release-version 3.9 --feature transaction.version=1 --add-scram
// 'SCRAM-SHA-256=[name=alice,password=alice-secret]' --add-scram
// 'SCRAM-SHA-512=[name=bob,password=bob-secret,iterations=8192]'.
func TestFormattedFeaturesAndScram(t *testing.T) {
	f, err := ReadFormatted(formattedDir(t, "kafka-4.4-standalone.checkpoint"))
	want := map[string]int16{"metadata.version": 33, "eligible.leader.replicas.version": 1, "group.version": 1,
		"share.version": 2, "streams.version": 1, "transaction.version": 2}
	if err != nil || !reflect.DeepEqual(f.Features, want) || f.ScramCredentials != nil {
		t.Errorf("Kafka 4.4's defaults: features %v, credentials %v, %v; want %v", f.Features, f.ScramCredentials, err, want)
	}

	f, err = ReadFormatted(formattedDir(t, "kafka-4.4-release-3.9-scram.checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int16{"metadata.version": 21, "transaction.version": 1}; !reflect.DeepEqual(f.Features, want) {
		t.Errorf("--release-version 3.9: features %v, want %v", f.Features, want)
	}
	if len(f.Voters) != 1 || f.Voters[0].ID != 1 {
		t.Errorf("voters %+v", f.Voters)
	}
	type shape struct {
		user            string
		mechanism       int8
		keyLen, saltLen int
		iterations      int32
	}
	var got []shape
	for _, c := range f.ScramCredentials {
		if len(c.ServerKey) != len(c.StoredKey) {
			t.Errorf("%s: stored key of %d bytes, server key of %d", c.User, len(c.StoredKey), len(c.ServerKey))
		}
		got = append(got, shape{c.User, c.Mechanism, len(c.StoredKey), len(c.Salt), c.Iterations})
	}
	// Kafka's format salts with 25 random characters; the keys are
	// SHA-256 and SHA-512 sums.
	if want := []shape{{"alice", 1, 32, 25, 4096}, {"bob", 2, 64, 25, 8192}}; !reflect.DeepEqual(got, want) {
		t.Errorf("credentials %+v, want %+v", got, want)
	}
}
