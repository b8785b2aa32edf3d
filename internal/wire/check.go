package wire

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/datastax/go-cassandra-native-protocol/frame"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// ErrBadBody is wrapped when a body announces counts or lengths it does not carry, or nests
// types deeper than maxTypeDepth: decoding it would allocate for data that is not there.
var ErrBadBody = errors.New("malformed frame body")

// maxTypeDepth bounds the nesting of column types (list<map<...>>). Real schemas nest a few
// levels; the decoder recurses once per level, so an unbounded depth could exhaust the stack.
const maxTypeDepth = 32

// CheckBody walks the parts of a response body whose decoding allocates from a count or
// length written in the body (frame custom payload, RESULT rows and prepared metadata, auth
// tokens, failure reason maps), and rejects one whose counts exceed the bytes that follow or
// whose types nest too deep. Everything else is left to the decoder, which reads it with
// bounded allocations. A body that passes is not necessarily valid, only safe to decode.
func CheckBody(h *frame.Header, body []byte) error {
	c := &cursor{b: body}
	switch h.OpCode {
	case primitive.OpCodeError, primitive.OpCodeReady, primitive.OpCodeAuthenticate,
		primitive.OpCodeSupported, primitive.OpCodeResult, primitive.OpCodeEvent,
		primitive.OpCodeAuthChallenge, primitive.OpCodeAuthSuccess:
	default: // a request's opcode: no server sends it
		return fmt.Errorf("%w: opcode %v is not a response", ErrBadBody, h.OpCode)
	}
	if h.Flags.Contains(primitive.HeaderFlagCompressed) {
		return nil // the codec has no decompressor and rejects it
	}
	if h.IsResponse && h.Flags.Contains(primitive.HeaderFlagTracing) {
		c.skip(16)
	}
	if h.Flags.Contains(primitive.HeaderFlagCustomPayload) {
		n := c.short()
		for i := 0; i < n && c.err == nil; i++ {
			c.str()
			c.bytes()
		}
	}
	if h.IsResponse && h.Flags.Contains(primitive.HeaderFlagWarning) {
		c.strList()
	}
	if c.err != nil {
		return c.fail(h)
	}
	switch h.OpCode {
	case primitive.OpCodeResult:
		c.result(h.Version)
	case primitive.OpCodeAuthChallenge, primitive.OpCodeAuthSuccess:
		c.bytes()
	case primitive.OpCodeSupported:
		n := c.short() // [string multimap]: the decoder sizes a map by n
		for i := 0; i < n && c.err == nil; i++ {
			c.str()
			c.strList()
		}
	case primitive.OpCodeEvent:
		switch c.text() {
		case string(primitive.EventTypeSchemaChange):
			c.schemaChange()
		}
	case primitive.OpCodeError:
		c.errorBody(h.Version)
	}
	if c.err != nil {
		return c.fail(h)
	}
	return nil
}

// cursor reads a body front to back; the first error sticks and later reads are no-ops.
type cursor struct {
	b   []byte
	off int
	err error
}

func (c *cursor) fail(h *frame.Header) error {
	return fmt.Errorf("%w: %v at byte %d of %d: %v", ErrBadBody, h.OpCode, c.off, len(c.b), c.err)
}

func (c *cursor) left() int { return len(c.b) - c.off }

func (c *cursor) skip(n int) {
	if c.err != nil {
		return
	}
	if n < 0 || n > c.left() {
		c.err = fmt.Errorf("%d bytes announced, %d left", n, c.left())
		return
	}
	c.off += n
}

func (c *cursor) int() int {
	if c.err != nil {
		return 0
	}
	if c.left() < 4 {
		c.skip(4)
		return 0
	}
	v := int32(binary.BigEndian.Uint32(c.b[c.off:]))
	c.off += 4
	return int(v)
}

func (c *cursor) short() int {
	if c.err != nil {
		return 0
	}
	if c.left() < 2 {
		c.skip(2)
		return 0
	}
	v := binary.BigEndian.Uint16(c.b[c.off:])
	c.off += 2
	return int(v)
}

func (c *cursor) str() { c.skip(c.short()) }

// text reads a [string]; "" after an error.
func (c *cursor) text() string {
	n := c.short()
	start := c.off
	c.skip(n)
	if c.err != nil {
		return ""
	}
	return string(c.b[start:c.off])
}

// schemaChange skips a schema change (event or result, protocol v3+): change type, target,
// keyspace, then a name and, for functions and aggregates, a [string list] of argument types
// whose length the decoder allocates for.
func (c *cursor) schemaChange() {
	c.str() // change type
	target := c.text()
	c.str() // keyspace
	switch primitive.SchemaChangeTarget(target) {
	case primitive.SchemaChangeTargetTable, primitive.SchemaChangeTargetType:
		c.str()
	case primitive.SchemaChangeTargetFunction, primitive.SchemaChangeTargetAggregate:
		c.str()
		c.strList()
	}
}
func (c *cursor) shortBytes() { c.skip(c.short()) }

// bytes skips a [bytes]: a negative length is NULL.
func (c *cursor) bytes() {
	if n := c.int(); n > 0 {
		c.skip(n)
	}
}

func (c *cursor) strList() {
	n := c.short()
	for i := 0; i < n && c.err == nil; i++ {
		c.str()
	}
}

// count reads an [int] count of items each at least size bytes long and checks that they
// can fit in what is left.
func (c *cursor) count(size int) int {
	n := c.int()
	if c.err == nil && (n < 0 || n > c.left()/size) {
		c.err = fmt.Errorf("count %d of %d-byte items, %d bytes left", n, size, c.left())
		return 0
	}
	return n
}

func (c *cursor) result(v primitive.ProtocolVersion) {
	switch primitive.ResultType(c.int()) {
	case primitive.ResultTypeRows:
		cols := c.rowsMetadata(v)
		rows := c.int()
		if c.err != nil {
			return
		}
		// Each value is at least its 4-byte length. A row of zero columns takes no bytes but
		// still costs the decoder a 24-byte row header: count it as 24 bytes.
		per := 4 * cols
		if cols == 0 {
			per = 24
		}
		if rows < 0 || rows > c.left()/per {
			c.err = fmt.Errorf("%d rows of %d columns, %d bytes left", rows, cols, c.left())
			return
		}
		for i := 0; i < rows*cols && c.err == nil; i++ {
			c.bytes()
		}
	case primitive.ResultTypeSchemaChange:
		c.schemaChange()
	case primitive.ResultTypePrepared:
		c.shortBytes()
		if v.SupportsResultMetadataId() {
			c.shortBytes()
		}
		c.variablesMetadata(v)
		c.rowsMetadata(v)
	}
}

// rowsMetadata skips a rows metadata block and returns its column count.
func (c *cursor) rowsMetadata(v primitive.ProtocolVersion) int {
	flags := primitive.RowsFlag(c.int())
	n := c.count(1)
	if flags.Contains(primitive.RowsFlagHasMorePages) {
		c.bytes()
	}
	if flags.Contains(primitive.RowsFlagMetadataChanged) {
		c.shortBytes()
	}
	if flags.Contains(primitive.RowsFlagDseContinuousPaging) {
		c.int()
	}
	if flags&primitive.RowsFlagNoMetadata == 0 {
		c.columns(flags.Contains(primitive.RowsFlagGlobalTablesSpec), n)
	}
	return n
}

func (c *cursor) variablesMetadata(v primitive.ProtocolVersion) {
	flags := primitive.VariablesFlag(c.int())
	n := c.count(1)
	if v >= primitive.ProtocolVersion4 {
		pk := c.count(2)
		c.skip(2 * pk)
	}
	if n > 0 { // unlike rows metadata, the decoder reads no table spec for zero columns
		c.columns(flags.Contains(primitive.VariablesFlagGlobalTablesSpec), n)
	}
}

// columns skips n column specs; each is at least a name and a type (4 bytes). As in the
// decoder, the global table spec is read even when n is 0.
func (c *cursor) columns(global bool, n int) {
	if global {
		c.str()
		c.str()
	}
	if c.err == nil && n > c.left()/4 {
		c.err = fmt.Errorf("%d columns, %d bytes left", n, c.left())
	}
	for i := 0; i < n && c.err == nil; i++ {
		if !global {
			c.str()
			c.str()
		}
		c.str()
		c.dataType(0)
	}
}

func (c *cursor) dataType(depth int) {
	if depth > maxTypeDepth {
		c.err = fmt.Errorf("column type nested deeper than %d", maxTypeDepth)
		return
	}
	switch primitive.DataTypeCode(c.short()) {
	case primitive.DataTypeCodeCustom:
		c.str()
	case primitive.DataTypeCodeList, primitive.DataTypeCodeSet:
		c.dataType(depth + 1)
	case primitive.DataTypeCodeMap:
		c.dataType(depth + 1)
		c.dataType(depth + 1)
	case primitive.DataTypeCodeUdt:
		c.str()
		c.str()
		n := c.short()
		for i := 0; i < n && c.err == nil; i++ {
			c.str()
			c.dataType(depth + 1)
		}
	case primitive.DataTypeCodeTuple:
		n := c.short()
		for i := 0; i < n && c.err == nil; i++ {
			c.dataType(depth + 1)
		}
	}
}

// errorBody checks the reason map of READ_FAILURE and WRITE_FAILURE (protocol v5 and later):
// an [int] count of (inetaddr, short) pairs, each at least 7 bytes.
func (c *cursor) errorBody(v primitive.ProtocolVersion) {
	code := primitive.ErrorCode(c.int())
	c.str() // message
	if !v.SupportsReadWriteFailureReasonMap() {
		return
	}
	switch code {
	case primitive.ErrorCodeReadFailure, primitive.ErrorCodeWriteFailure:
		c.short() // consistency
		c.int()   // received
		c.int()   // block for
		c.count(7)
	}
}
