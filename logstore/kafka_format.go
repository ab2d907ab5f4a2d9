package logstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kbin"
)

// What kafka-storage format leaves in a log dir, which Gregor reads so that
// a dir prepared as Kafka's docs say starts the same cluster: the
// meta.properties (its cluster id, FormattedClusterID) and the metadata
// log's bootstrap snapshot (ReadFormatted): the voters given with
// --initial-controllers or --standalone, the feature levels of
// --release-version and --feature, and the SCRAM credentials of
// --add-scram. The snapshot is a record batch file: a control batch with
// the snapshot header, the KRaftVersion and the KRaftVoters records, data
// batches of metadata records, and a control batch with the footer.
// Gregor only reads it.

// bootstrapSnapshot is where kafka-storage format writes the snapshot.
var bootstrapSnapshot = filepath.Join(kraftMetadataDir, "00000000000000000000-0000000000.checkpoint")

// kraftVotersType is the control record type of KRaftVoters (Kafka's
// ControlRecordType.KRAFT_VOTERS).
const kraftVotersType = 6

// The metadata record types the bootstrap snapshot's data batches carry
// that Gregor takes (Kafka's MetadataRecordType).
const (
	userScramCredentialRecord = 11
	featureLevelRecord        = 12
)

// Formatted is what kafka-storage format wrote into a dir's bootstrap
// snapshot.
type Formatted struct {
	// Voters are the voters of --initial-controllers or --standalone;
	// none for a static quorum (controller.quorum.voters).
	Voters []FormattedVoter
	// Features are the feature levels the format set: metadata.version
	// from --release-version (the tool's own release by default) and
	// every other feature that release or --feature puts above 0. Nil
	// when the dir has no snapshot.
	Features map[string]int16
	// ScramCredentials are the users --add-scram created.
	ScramCredentials []FormattedScramCredential
}

// FormattedVoter is one voter of a formatted metadata log.
type FormattedVoter struct {
	ID          int32
	DirectoryID [16]byte
	Endpoints   []FormattedEndpoint
}

// FormattedEndpoint is a voter's listener.
type FormattedEndpoint struct {
	Name, Host string
	Port       uint16
}

// FormattedScramCredential is one user's SCRAM credential for one
// mechanism (1 SCRAM-SHA-256, 2 SCRAM-SHA-512): no password, the salt and
// the keys derived from it.
type FormattedScramCredential struct {
	User                       string
	Mechanism                  int8
	Salt, StoredKey, ServerKey []byte
	Iterations                 int32
}

// FormattedClusterID is the cluster id of the meta.properties in dir, ""
// when there is none.
func FormattedClusterID(dir string) string {
	m, err := readMetaProperties(filepath.Join(dir, metaPropertiesFile))
	if err != nil {
		return ""
	}
	return m.ClusterID
}

// ReadFormatted returns what the bootstrap snapshot kafka-storage format
// wrote into dir holds: nothing when there is no snapshot.
func ReadFormatted(dir string) (Formatted, error) {
	var f Formatted
	data, err := os.ReadFile(filepath.Join(dir, bootstrapSnapshot))
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, err
	}
	f.Features = map[string]int16{}
	err = protocol.EachBatch(data, func(h protocol.BatchHeader, batch []byte) error {
		control := h.Attributes&protocol.AttrControl != 0
		return protocol.Records(batch, func(r *protocol.Record) error {
			if !control {
				return f.addMetadataRecord(r.Value)
			}
			if len(r.Key) != 4 || binary.BigEndian.Uint16(r.Key[2:]) != kraftVotersType {
				return nil
			}
			var err error
			f.Voters, err = decodeVoters(r.Value)
			return err
		})
	})
	if err != nil {
		return Formatted{}, fmt.Errorf("%s: %w", filepath.Join(dir, bootstrapSnapshot), err)
	}
	return f, nil
}

// addMetadataRecord takes a feature level or a SCRAM credential from a
// metadata record as Kafka frames it (MetadataRecordSerde: frame version
// 1, the record type and its version as unsigned varints, then the
// record); other records are not Gregor's to bootstrap.
func (f *Formatted) addMetadataRecord(value []byte) error {
	r := kbin.Reader{Src: value}
	if frame := r.Uvarint(); frame != 1 {
		return fmt.Errorf("metadata record frame version %d, want 1", frame)
	}
	typ, version := r.Uvarint(), r.Uvarint()
	switch {
	case typ == featureLevelRecord && version == 0:
		name, level := r.CompactString(), r.Int16()
		skipTags(&r)
		if err := r.Complete(); err != nil {
			return fmt.Errorf("FeatureLevel record: %w", err)
		}
		f.Features[name] = level
	case typ == userScramCredentialRecord && version == 0:
		c := FormattedScramCredential{User: r.CompactString(), Mechanism: r.Int8(),
			Salt: r.CompactBytes(), StoredKey: r.CompactBytes(), ServerKey: r.CompactBytes(), Iterations: r.Int32()}
		skipTags(&r)
		if err := r.Complete(); err != nil {
			return fmt.Errorf("UserScramCredential record: %w", err)
		}
		c.Salt, c.StoredKey, c.ServerKey = bytes.Clone(c.Salt), bytes.Clone(c.StoredKey), bytes.Clone(c.ServerKey)
		f.ScramCredentials = append(f.ScramCredentials, c)
	case typ == featureLevelRecord || typ == userScramCredentialRecord:
		return fmt.Errorf("metadata record type %d at version %d, which Gregor does not read", typ, version)
	}
	return nil
}

// decodeVoters reads a VotersRecord (version 0, flexible).
func decodeVoters(value []byte) ([]FormattedVoter, error) {
	r := kbin.Reader{Src: value}
	if v := r.Int16(); v != 0 {
		return nil, fmt.Errorf("KRaftVoters record version %d, want 0", v)
	}
	var voters []FormattedVoter
	for n := r.CompactArrayLen(); n > 0 && r.Ok(); n-- {
		v := FormattedVoter{ID: r.Int32(), DirectoryID: r.Uuid()}
		for m := r.CompactArrayLen(); m > 0 && r.Ok(); m-- {
			e := FormattedEndpoint{Name: r.CompactString(), Host: r.CompactString(), Port: r.Uint16()}
			skipTags(&r)
			v.Endpoints = append(v.Endpoints, e)
		}
		r.Int16() // the KRaftVersionFeature range
		r.Int16()
		skipTags(&r)
		skipTags(&r)
		voters = append(voters, v)
	}
	skipTags(&r)
	if err := r.Complete(); err != nil {
		return nil, fmt.Errorf("KRaftVoters record: %w", err)
	}
	return voters, nil
}

// skipTags skips a flexible message's tagged fields.
func skipTags(r *kbin.Reader) {
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}
