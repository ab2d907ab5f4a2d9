package broker

// Zero-copy fetch responses. A fetch reads its partitions as file ranges
// (logstore.Log.ReadRanges) instead of bytes. Each range stands in the
// kmsg response as a 16-byte marker, unique to the connection, where the
// records bytes go; the response is encoded by kmsg as usual, and then
// every marker and its length prefix are cut out of the encoded frame and
// the real length written in their place. What reaches the writer is the
// frame's bytes with split points, and the file range that belongs at
// each: the writer sends the bytes from memory and the ranges with
// sendfile(2), so record data goes from the page cache to the socket
// without passing through user space. The bytes on the wire are exactly
// what encoding the copied records would give (fetch_splice_test.go).

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"

	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// copyFetches turns the zero-copy path off (tests compare both paths).
var copyFetches atomic.Bool

const markerLen = 16

// response is one encoded response frame for the writer: buf alone, or
// buf with ranges[i] sent at byte splits[i] of buf. Responses come from a
// pool (frames.go).
type response struct {
	buf    []byte
	splits []int
	ranges []logstore.FileRange
}

// size is the frame's length on the wire.
func (r *response) size() int64 {
	n := int64(len(r.buf))
	for _, fr := range r.ranges {
		n += fr.Len
	}
	return n
}

// fetchSplice collects the ranges of the fetch being handled on one
// connection, with their markers.
type fetchSplice struct {
	prefix  [markerLen - 4]byte // random, per connection
	ranges  []logstore.FileRange
	markers []byte
}

func newFetchSplice() *fetchSplice {
	z := &fetchSplice{}
	_, _ = rand.Read(z.prefix[:])
	return z
}

// reset forgets the ranges of an earlier read of the same fetch.
func (z *fetchSplice) reset() {
	z.ranges, z.markers = z.ranges[:0], z.markers[:0]
}

// add records a range and returns the marker that stands for it.
func (z *fetchSplice) add(r logstore.FileRange) []byte {
	start := len(z.markers)
	z.markers = append(z.markers, z.prefix[:]...)
	z.markers = binary.BigEndian.AppendUint32(z.markers, uint32(len(z.ranges)))
	z.ranges = append(z.ranges, r)
	return z.markers[start:len(z.markers):len(z.markers)]
}

// marker i as add wrote it.
func (z *fetchSplice) marker(i int) []byte {
	var m [markerLen]byte
	copy(m[:], z.prefix[:])
	binary.BigEndian.PutUint32(m[markerLen-4:], uint32(i))
	return m[:]
}

// encode frames resp with the ranges spliced in. It returns false when a
// marker is not where it must be (then the caller copies instead).
func (z *fetchSplice) encode(correlationID int32, resp *kmsg.FetchResponse) (*response, bool) {
	out := encodeResponse(correlationID, resp)
	buf := out.buf
	flexible := resp.IsFlexible()
	oldPrefix := 4
	if flexible {
		oldPrefix = 1 // uvarint(16+1)
	}
	out.ranges = append(out.ranges, z.ranges...)
	w, r := 0, 0 // compact buf in place: w writes, r reads (w <= r always)
	var total int64
	for i := range z.ranges {
		at := indexFrom(buf, r, z.marker(i))
		if at < r+oldPrefix || !hasMarkerPrefix(buf[at-oldPrefix:at], flexible) {
			out.free()
			return nil, false
		}
		w += copy(buf[w:], buf[r:at-oldPrefix])
		n := z.ranges[i].Len
		if flexible {
			w += binary.PutUvarint(buf[w:], uint64(n)+1)
		} else {
			binary.BigEndian.PutUint32(buf[w:], uint32(n))
			w += 4
		}
		out.splits = append(out.splits, w)
		total += n
		r = at + markerLen
	}
	w += copy(buf[w:], buf[r:])
	out.buf = buf[:w]
	binary.BigEndian.PutUint32(out.buf, uint32(int64(w-4)+total))
	return out, true
}

// materialize replaces every marker in resp by the bytes of its range: the
// copying answer, for when encode cannot splice.
func (z *fetchSplice) materialize(resp *kmsg.FetchResponse) error {
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			p := &resp.Topics[ti].Partitions[pi]
			if len(p.RecordBatches) != markerLen || string(p.RecordBatches[:markerLen-4]) != string(z.prefix[:]) {
				continue
			}
			r := z.ranges[binary.BigEndian.Uint32(p.RecordBatches[markerLen-4:])]
			b := make([]byte, r.Len)
			if n, err := r.File.ReadAt(b, r.Pos); int64(n) < r.Len {
				return errors.Join(errShortFile, err)
			}
			p.RecordBatches = b
		}
	}
	return nil
}

func indexFrom(b []byte, from int, sub []byte) int {
	for i := from; i+len(sub) <= len(b); i++ {
		if b[i] == sub[0] && string(b[i:i+len(sub)]) == string(sub) {
			return i
		}
	}
	return -1
}

// hasMarkerPrefix checks the length prefix kmsg wrote for a marker.
func hasMarkerPrefix(p []byte, flexible bool) bool {
	if flexible {
		return p[0] == markerLen+1
	}
	return binary.BigEndian.Uint32(p) == markerLen
}

// smallRange is the size up to which a range is read into the write buffer
// rather than sent with its own sendfile call.
const smallRange = 16 << 10

var errShortFile = errors.New("segment file ended inside a range")

// writeResponse writes one response through w, sending ranges from their
// files with fs.
func writeResponse(w *bufio.Writer, fs *fileSender, resp *response) error {
	if len(resp.ranges) == 0 {
		_, err := w.Write(resp.buf)
		return err
	}
	prev := 0
	for i, r := range resp.ranges {
		if _, err := w.Write(resp.buf[prev:resp.splits[i]]); err != nil {
			return err
		}
		prev = resp.splits[i]
		if err := writeRange(w, fs, r); err != nil {
			return err
		}
	}
	_, err := w.Write(resp.buf[prev:])
	return err
}

func writeRange(w *bufio.Writer, fs *fileSender, r logstore.FileRange) error {
	if r.Len <= smallRange {
		if int64(w.Available()) < r.Len {
			if err := w.Flush(); err != nil {
				return err
			}
		}
		if int64(w.Available()) >= r.Len {
			b := w.AvailableBuffer()[:r.Len]
			if n, err := r.File.ReadAt(b, r.Pos); int64(n) < r.Len {
				return errors.Join(errShortFile, err)
			}
			_, err := w.Write(b)
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return fs.send(r)
}

// fileSender sends file ranges to one connection's socket with
// sendfile(2), each at its own offset (the file's shared position is not
// used, so connections can send from one file at once), holding the
// file's descriptor open while in use (RawConn.Control). Its callbacks
// are bound once, so a send allocates nothing; it is used by the
// connection's writer only.
type fileSender struct {
	nc        net.Conn
	sock      syscall.RawConn // nil: not a socket, copy instead
	control   func(fd uintptr)
	write     func(fd uintptr) bool
	inFD      uintptr
	off, left int64
	err       error
}

func newFileSender(nc net.Conn) *fileSender {
	fs := &fileSender{nc: nc}
	if sc, ok := nc.(syscall.Conn); ok {
		fs.sock, _ = sc.SyscallConn()
	}
	fs.control, fs.write = fs.fromFile, fs.toSocket
	return fs
}

func (fs *fileSender) send(r logstore.FileRange) error {
	if fs.sock == nil || r.Raw == nil {
		_, err := io.Copy(fs.nc, io.NewSectionReader(r.File, r.Pos, r.Len))
		return err
	}
	fs.off, fs.left, fs.err = r.Pos, r.Len, nil
	if err := r.Raw.Control(fs.control); err != nil {
		return err
	}
	return fs.err
}

// fromFile runs with the file's descriptor held open.
func (fs *fileSender) fromFile(fd uintptr) {
	fs.inFD = fd
	if err := fs.sock.Write(fs.write); fs.err == nil {
		fs.err = err
	}
}

// toSocket sends what is left, returning false to wait until the socket
// can take more.
func (fs *fileSender) toSocket(outFD uintptr) bool {
	for fs.left > 0 {
		n, err := syscall.Sendfile(int(outFD), int(fs.inFD), &fs.off, int(min(fs.left, 1<<30)))
		if n > 0 {
			fs.left -= int64(n)
		}
		switch {
		case err == syscall.EAGAIN:
			return false
		case err == syscall.EINTR:
		case err != nil:
			fs.err = err
			return true
		case n == 0:
			fs.err = errShortFile
			return true
		}
	}
	return true
}
