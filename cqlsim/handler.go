package cqlsim

import (
	"bytes"
	"fmt"
	"runtime/debug"
	"strconv"

	"github.com/datastax/go-cassandra-native-protocol/frame"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"
)

// passwordAuthenticator is the class name real Cassandra announces in AUTHENTICATE.
const passwordAuthenticator = "org.apache.cassandra.auth.PasswordAuthenticator"

// serveFrame answers one request; false once the connection is closed. Every request gets a response,
// an ERROR at least: a request no handler understands must not leave the client waiting for its timeout.
func (c *serverConn) serveFrame(raw *frame.RawFrame) bool {
	v, stream := raw.Header.Version, raw.Header.StreamId
	var o outFrame
	if raw.Header.IsResponse {
		o.f = frame.NewFrame(v, stream, &message.ProtocolError{ErrorMessage: "Unexpected response frame from client"})
	} else if f, err := c.codec.ConvertFromRawFrame(raw); err != nil {
		o.f = frame.NewFrame(v, stream, &message.ProtocolError{ErrorMessage: err.Error()})
	} else {
		o = c.answer(f)
	}
	if o.f.Header.OpCode != primitive.OpCodeReady && o.f.Header.OpCode != primitive.OpCodeAuthenticate {
		o.compress = c.compressing.Load()
	}
	return c.enqueue(o)
}

// answer dispatches a decoded request; a panic becomes a SERVER_ERROR rather than a silent connection.
func (c *serverConn) answer(f *frame.Frame) (o outFrame) {
	v, stream := f.Header.Version, f.Header.StreamId
	defer func() {
		if r := recover(); r != nil {
			c.node.c.cfg.Logf("cqlsim: node %d: panic serving %v: %v\n%s", c.node.index, f.Body.Message, r, debug.Stack())
			o = outFrame{f: frame.NewFrame(v, stream, &message.ServerError{ErrorMessage: fmt.Sprint(r)})}
		}
	}()
	resp, err := c.dispatch(f)
	if err != nil {
		resp = errorMessage(err)
	}
	o.f = frame.NewFrame(v, stream, resp)
	if v.SupportsModernFramingLayout() && !c.beta && (resp.GetOpCode() == primitive.OpCodeReady || resp.GetOpCode() == primitive.OpCodeAuthenticate) && !c.modernIn {
		// v5: both directions switch to segments right after this response.
		o.switchModern = true
		c.modernIn = true
	}
	return o
}

func (c *serverConn) dispatch(f *frame.Frame) (message.Message, error) {
	switch m := f.Body.Message.(type) {
	case *message.Options:
		return c.supported(f.Header.Version), nil
	case *message.Startup:
		return c.startup(f.Header.Version, m)
	case *message.AuthResponse:
		return c.authResponse(m)
	}
	if !c.started {
		expecting := "STARTUP or OPTIONS"
		if c.authPending {
			expecting = "SASL_RESPONSE"
		}
		return nil, protocolErrorf("Unexpected message %s, expecting %s", opName(f.Header.OpCode), expecting)
	}
	switch m := f.Body.Message.(type) {
	case *message.Register:
		c.mu.Lock()
		for _, t := range m.EventTypes {
			c.events[t] = true
		}
		c.mu.Unlock()
		return &message.Ready{}, nil
	case *message.Query:
		return c.query(f.Header.Version, m)
	case *message.Prepare:
		return c.prepare(f.Header.Version, m)
	case *message.Execute:
		return c.execute(f.Header.Version, m)
	case *message.Batch:
		return c.batch(f.Header.Version, m)
	}
	return nil, protocolErrorf("Unexpected message %s", opName(f.Header.OpCode))
}

// opName spells an opcode as Cassandra's messages do.
func opName(op primitive.OpCode) string {
	names := map[primitive.OpCode]string{
		primitive.OpCodeError: "ERROR", primitive.OpCodeStartup: "STARTUP", primitive.OpCodeReady: "READY",
		primitive.OpCodeAuthenticate: "AUTHENTICATE", primitive.OpCodeOptions: "OPTIONS",
		primitive.OpCodeSupported: "SUPPORTED", primitive.OpCodeQuery: "QUERY", primitive.OpCodeResult: "RESULT",
		primitive.OpCodePrepare: "PREPARE", primitive.OpCodeExecute: "EXECUTE", primitive.OpCodeRegister: "REGISTER",
		primitive.OpCodeEvent: "EVENT", primitive.OpCodeBatch: "BATCH", primitive.OpCodeAuthChallenge: "AUTH_CHALLENGE",
		primitive.OpCodeAuthResponse: "AUTH_RESPONSE", primitive.OpCodeAuthSuccess: "AUTH_SUCCESS",
	}
	if n, ok := names[op]; ok {
		return n
	}
	return fmt.Sprintf("0x%02X", uint8(op))
}

// supported lists what real Cassandra lists, minus lz4, which the simulator cannot compress.
func (c *serverConn) supported(v primitive.ProtocolVersion) *message.Supported {
	rel := c.node.c.rel
	compression := []string{"snappy"}
	if v >= primitive.ProtocolVersion5 && !c.beta {
		compression = []string{} // v5 compresses segments with lz4 only
	}
	return &message.Supported{Options: map[string][]string{
		"CQL_VERSION":       {rel.cqlVersion()},
		"COMPRESSION":       compression,
		"PROTOCOL_VERSIONS": rel.protocolVersions(),
	}}
}

func (c *serverConn) startup(v primitive.ProtocolVersion, m *message.Startup) (message.Message, error) {
	if c.started || c.authPending {
		return nil, protocolErrorf("Unexpected message STARTUP, the connection is already initialized")
	}
	if _, ok := m.Options[message.StartupOptionCqlVersion]; !ok {
		return nil, protocolErrorf("Missing value CQL_VERSION in STARTUP message")
	}
	compress := false
	switch comp := m.Options[message.StartupOptionCompression]; comp {
	case "":
	case "snappy":
		if v >= primitive.ProtocolVersion5 {
			return nil, protocolErrorf("Unknown compression algorithm: %s", comp)
		}
		compress = true
	default:
		return nil, protocolErrorf("Unknown compression algorithm: %s", comp)
	}
	// The response itself goes uncompressed; everything after it is compressed.
	defer c.compressing.Store(compress)
	if _, _, required := c.node.c.credentials(); required {
		c.authPending = true
		return &message.Authenticate{Authenticator: passwordAuthenticator}, nil
	}
	c.started = true
	return &message.Ready{}, nil
}

// authResponse checks a SASL PLAIN token: [authzid] NUL user NUL password.
func (c *serverConn) authResponse(m *message.AuthResponse) (message.Message, error) {
	if !c.authPending {
		return nil, protocolErrorf("Unexpected message AUTH_RESPONSE")
	}
	parts := bytes.Split(m.Token, []byte{0})
	if len(parts) != 3 {
		return nil, &requestError{&message.AuthenticationError{ErrorMessage: "Authentication failed: malformed SASL PLAIN token"}}
	}
	user, pass := string(parts[1]), string(parts[2])
	wantUser, wantPass, required := c.node.c.credentials()
	if required && (user != wantUser || pass != wantPass) {
		return nil, &requestError{&message.AuthenticationError{
			ErrorMessage: "Provided username " + user + " and/or password are incorrect"}}
	}
	c.authPending, c.started = false, true
	return &message.AuthSuccess{}, nil
}

// unpreparedError is Cassandra's answer to an EXECUTE of an id this node does not know.
func unpreparedError(id []byte) error {
	return &requestError{&message.Unprepared{
		ErrorMessage: "Prepared query with ID " + strconv.Quote(fmt.Sprintf("%x", id)) + " not found (either the query was " +
			"not prepared on this host (maybe the host has been restarted?) or you have prepared too many queries " +
			"and it has been evicted from the internal cache)",
		Id: id,
	}}
}
