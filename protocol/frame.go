package protocol

import (
	"encoding/binary"
	"fmt"
	"io"
)

// FrameTooLargeError is returned for a frame whose size prefix exceeds the
// limit (socket.request.max.bytes); Kafka closes such connections.
type FrameTooLargeError struct {
	Size, Max int32
}

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("frame of %d bytes exceeds socket.request.max.bytes %d", e.Size, e.Max)
}

// ReadFrame reads one size-prefixed frame from r into buf (grown as needed)
// and returns the frame's bytes without the prefix. A negative size or one
// above max is an error and nothing more is read.
func ReadFrame(r io.Reader, buf []byte, max int32) ([]byte, error) {
	var sizeBuf [4]byte
	if _, err := io.ReadFull(r, sizeBuf[:]); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
	if size < 0 || size > max {
		return nil, &FrameTooLargeError{Size: size, Max: max}
	}
	if cap(buf) < int(size) {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}
