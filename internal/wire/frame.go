package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/datastax/go-cassandra-native-protocol/frame"
)

// ProtocolMaxFrameSize is the native protocol's hard limit on a frame body: 256 MiB.
const ProtocolMaxFrameSize = 256 << 20

// ErrFrameTooLarge is wrapped when a frame header announces a body over the limit.
var ErrFrameTooLarge = errors.New("frame too large")

// bodyChunk is how much body buffer is grown at a time: a body is held in memory only as it
// arrives, so a header announcing more than is sent costs at most one chunk extra.
const bodyChunk = 64 << 10

// ReadFrame reads one frame whose body may be at most max bytes (clamped to
// ProtocolMaxFrameSize). The body buffer grows with the bytes received, not with the length
// the header announces.
func ReadFrame(r io.Reader, codec frame.RawDecoder, max int) (*frame.RawFrame, error) {
	h, err := codec.DecodeHeader(r)
	if err != nil {
		return nil, fmt.Errorf("cannot decode frame header: %w", err)
	}
	if max <= 0 || max > ProtocolMaxFrameSize {
		max = ProtocolMaxFrameSize
	}
	n := int64(h.BodyLength)
	switch {
	case n < 0:
		return nil, fmt.Errorf("invalid frame body length %d", n)
	case n > int64(max):
		return nil, fmt.Errorf("%w: body of %d bytes announced, limit %d", ErrFrameTooLarge, n, max)
	}
	var buf bytes.Buffer
	buf.Grow(int(min(n, bodyChunk)))
	for buf.Len() < int(n) {
		step := min(n-int64(buf.Len()), bodyChunk)
		if _, err := io.CopyN(&buf, r, step); err != nil {
			return nil, fmt.Errorf("cannot read frame body (%d of %d bytes): %w", buf.Len(), n, err)
		}
	}
	return &frame.RawFrame{Header: h, Body: buf.Bytes()}, nil
}

// Decode checks raw's body (CheckBody) and converts it to a frame.
func Decode(codec frame.RawConverter, raw *frame.RawFrame) (*frame.Frame, error) {
	if err := CheckBody(raw.Header, raw.Body); err != nil {
		return nil, err
	}
	return codec.ConvertFromRawFrame(raw)
}
